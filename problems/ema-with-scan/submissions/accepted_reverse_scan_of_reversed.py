# Honest (red-team round of 2026-12-06): a reverse=True scan over x[::-1].
import jax
import jax.numpy as jnp


def solve(x, alpha):
    def step(m, row):
        m = alpha * row + (1 - alpha) * m
        return m, m
    _, ys = jax.lax.scan(step, x[0], x[::-1], reverse=True)
    return {"ema": ys[::-1]}
