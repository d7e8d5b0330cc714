# jax.lax.cond on the traced step: two branches, one taken when the program runs.
import jax
import jax.numpy as jnp

PEAK, FLOOR, WARMUP, TOTAL = 0.1, 0.001, 100, 1000


def warmup(t):
    return PEAK * t / WARMUP


def cosine(t):
    p = jnp.minimum((t - WARMUP) / (TOTAL - WARMUP), 1.0)
    return FLOOR + (PEAK - FLOOR) * jnp.cos(0.5 * jnp.pi * p) ** 2  # (1 + cos x) / 2 = cos^2(x/2)


def solve(step, w, g):
    lr = jax.lax.cond(step < WARMUP, warmup, cosine, step.astype(jnp.float32))
    return {"lr": lr, "w": w - lr * g}
