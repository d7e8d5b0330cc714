# The cosine's progress measured from step 0 over TOTAL steps, not from the end of warmup
# over TOTAL - WARMUP.
import jax.numpy as jnp


def solve(step, w, g):
    t = step.astype(jnp.float32)
    p = jnp.clip(t / 1000, 0.0, 1.0)
    cosine = 0.001 + 0.0495 * (1 + jnp.cos(jnp.pi * p))
    lr = jnp.where(step < 100, 0.1 * t / 100, cosine)
    return {"lr": lr, "w": w - lr * g}
