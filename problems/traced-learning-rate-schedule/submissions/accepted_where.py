# jnp.where between the warmup line and the clipped cosine (the reference's style).
import jax.numpy as jnp


def solve(step, w, g):
    t = step.astype(jnp.float32)
    warm = 0.1 * t / 100
    p = jnp.clip((t - 100) / 900, 0.0, 1.0)
    cosine = 0.001 + 0.5 * (0.1 - 0.001) * (1 + jnp.cos(jnp.pi * p))
    lr = jnp.where(step < 100, warm, cosine)
    return {"lr": lr, "w": w - lr * g}
