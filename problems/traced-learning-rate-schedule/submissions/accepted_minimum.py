# Branch-free: the warmup line is below the (clipped) cosine before step 100 and above it
# after, so the schedule is their minimum.
import jax.numpy as jnp


def solve(step, w, g):
    t = step.astype(w.dtype)
    cosine = 0.001 + 0.0495 * (1 + jnp.cos(jnp.pi * jnp.clip(t / 900 - 1 / 9, 0, 1)))
    lr = jnp.minimum(t * 1e-3, cosine)
    return {"lr": lr, "w": w - g * lr}
