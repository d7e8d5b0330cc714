# Integer division on the int32 step: (step - 100) // 900 is 0 through the whole cosine, so lr
# stays at the peak until TOTAL.
import jax.numpy as jnp


def solve(step, w, g):
    p = jnp.clip((step - 100) // 900, 0, 1).astype(jnp.float32)
    cosine = 0.001 + 0.0495 * (1 + jnp.cos(jnp.pi * p))
    lr = jnp.where(step < 100, 0.1 * step.astype(jnp.float32) / 100, cosine)
    return {"lr": lr, "w": w - lr * g}
