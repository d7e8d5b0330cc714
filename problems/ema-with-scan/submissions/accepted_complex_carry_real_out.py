# Honest (red-team round 5 of 2026-12-06, issue #30): a complex64 carry, each step's real part
# stacked as the output.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    a = alpha.astype(jnp.complex64)

    def step(m, row):
        m = a * row.astype(jnp.complex64) + (1 - a) * m
        return m, jnp.real(m)

    _, ys = jax.lax.scan(step, x[0].astype(jnp.complex64), x)
    return {"ema": ys}
