# Honest but unusual (red-team round 5 of 2026-12-06, issue #30): lr depends on step through an
# int8 value that wraps around at run time; the folding once took it for a constant and rejected it.
import jax
import jax.numpy as jnp


def solve(step, w, g):
    t = step.astype(jnp.float32)
    warm = 0.1 * t / 100
    p = jnp.clip((t - 100) / 900, 0.0, 1.0)
    cosine = 0.001 + 0.5 * (0.1 - 0.001) * (1 + jnp.cos(jnp.pi * p))
    honest = jnp.where(step < 100, warm, cosine)
    flag = (jnp.int8(100) + (step & 0).astype(jnp.int8) + jnp.int8(100)) > 0  # False at run time
    lr = jnp.where(flag, jnp.float32(0.05), honest)
    return {"lr": lr, "w": w - lr * g}
