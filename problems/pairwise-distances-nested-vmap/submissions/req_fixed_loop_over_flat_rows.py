"""Decoy: a fori_loop of a constant 16 steps (the largest N) reading point min(i, N - 1) as a
chunk of D values of `x.reshape(-1)`: N is the outer part of the merged (N*D) axis, so a
chunk of D is a slice along N (one point per step), not a whole copy of it."""

import jax
import jax.numpy as jnp

N_MAX = 16


def solve(x, y):
    n, dd = x.shape
    xf = x.reshape(-1)
    y_sq = jnp.sum(y * y, axis=1)

    def row(i, d2):
        r = jnp.minimum(i, n - 1)
        a = jax.lax.dynamic_slice(xf, (r * dd,), (dd,))  # = x[r]
        return d2.at[r].set(jnp.maximum(jnp.dot(a, a) + y_sq - 2.0 * (y @ a), 0.0))

    d2 = jax.lax.fori_loop(0, N_MAX, row, jnp.zeros((n, y.shape[0]), x.dtype))
    return {"d2": d2, "d": jnp.sqrt(d2)}
