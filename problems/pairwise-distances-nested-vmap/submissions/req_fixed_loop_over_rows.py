"""Decoy: a fori_loop of a constant 16 steps (the largest N) that computes one row of
distances per step, reading row min(i, N - 1) of x. Its trip count is 16 for every N, so the
programs' loops never differ; it still visits the points of x one at a time, at an index
computed from the loop's counter."""

import jax
import jax.numpy as jnp

N_MAX = 16


def solve(x, y):
    n = x.shape[0]
    y_sq = jnp.sum(y * y, axis=1)

    def row(i, d2):
        r = jnp.minimum(i, n - 1)
        a = x[r]
        return d2.at[r].set(jnp.maximum(jnp.dot(a, a) + y_sq - 2.0 * (y @ a), 0.0))

    d2 = jax.lax.fori_loop(0, N_MAX, row, jnp.zeros((n, y.shape[0]), x.dtype))
    return {"d2": d2, "d": jnp.sqrt(d2)}
