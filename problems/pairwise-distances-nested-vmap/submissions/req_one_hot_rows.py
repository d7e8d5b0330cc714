# Cheat (a former known limit; requirement_failed since the grader observes the run): a fori_loop of a constant 16 steps (the largest N)
# that selects point min(i, N - 1) of x with a one-hot product instead of an index, and adds
# its row of distances to the output under a one-hot mask. No indexing op reads x or writes
# the output at the counter, so the loop over the points is not seen.
import jax
import jax.numpy as jnp

N_MAX = 16


def solve(x, y):
    n = x.shape[0]
    y_sq = jnp.sum(y * y, axis=1)

    def row(i, d2):
        pick = (jnp.arange(n) == jnp.minimum(i, n - 1)).astype(x.dtype)  # (N,) one-hot
        a = pick @ x
        dist = jnp.maximum(jnp.dot(a, a) + y_sq - 2.0 * (y @ a), 0.0)
        return jnp.where((pick > 0)[:, None], dist[None, :], d2)

    d2 = jax.lax.fori_loop(0, N_MAX, row, jnp.zeros((n, y.shape[0]), x.dtype))
    return {"d2": d2, "d": jnp.sqrt(d2)}
