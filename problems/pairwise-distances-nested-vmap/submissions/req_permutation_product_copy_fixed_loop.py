# Cheat (execution evidence): x copied through products with a permutation matrix of its
# features built at run time (reversed twice), then one point per step of a fixed 16-step loop.
import jax
import jax.numpy as jnp

N_MAX = 16


def solve(x, y):
    n, d = x.shape
    flip = (jnp.arange(d)[:, None] + jnp.arange(d)[None, :] == d - 1).astype(x.dtype)
    xc = (x @ flip) @ flip
    y_sq = jnp.sum(y * y, axis=1)

    def row(i, d2):
        r = jnp.minimum(i, n - 1)
        a = xc[r]
        dist = jnp.maximum(jnp.dot(a, a) + y_sq - 2.0 * (y @ a), 0.0)
        return d2.at[r].set(dist)

    d2 = jax.lax.fori_loop(0, N_MAX, row, jnp.zeros((n, y.shape[0]), x.dtype))
    return {"d2": d2, "d": jnp.sqrt(d2)}
