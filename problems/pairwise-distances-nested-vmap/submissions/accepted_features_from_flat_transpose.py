"""Honest: a fori_loop over the D features (allowed) reading feature k of every point as one
chunk of N (resp. M) contiguous values of `x.T.reshape(-1)`: a merged (D*N) axis whose inner
part is N, of which each step takes a whole copy. Every step takes all of the points."""

import jax
import jax.numpy as jnp


def solve(x, y):
    n, m = x.shape[0], y.shape[0]
    xf, yf = x.T.reshape(-1), y.T.reshape(-1)  # (D*N,), (D*M,): feature k at [k*N, (k+1)*N)

    def add_feature(k, acc):
        a = jax.lax.dynamic_slice(xf, (k * n,), (n,))  # feature k of all N points
        b = jax.lax.dynamic_slice(yf, (k * m,), (m,))
        diff = a[:, None] - b[None, :]
        return acc + diff * diff

    d2 = jax.lax.fori_loop(0, x.shape[1], add_feature, jnp.zeros((n, m), x.dtype))
    return {"d2": d2, "d": jnp.sqrt(d2)}
