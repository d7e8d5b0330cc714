# Honest (red-team round 5 of 2026-12-06, issue #30): the scan's carry is complex64, its real part
# the running average; the stacked output's real part is returned. Once rejected: complex
# parts were not read as elementwise by the static check.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    a = alpha.astype(jnp.complex64)

    def step(m, row):
        m = a * row.astype(jnp.complex64) + (1 - a) * m
        return m, m

    _, ys = jax.lax.scan(step, x[0].astype(jnp.complex64), x)
    return {"ema": jnp.real(ys).astype(jnp.float32)}
