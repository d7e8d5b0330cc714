# Cheat (red-team round 5 of 2026-12-06, issue #30): a 17-step loop over the rows of x padded to
# 16, each row picked by onehot @ x and folded in halves at two consecutive steps. A loop over
# the points.
import jax
import jax.numpy as jnp
N_MAX = 16
def solve(x, y):
    N = x.shape[0]
    yy = jnp.sum(y * y, axis=1)
    def one(i):
        oh = (jnp.arange(N) == i).astype(x.dtype)
        a = oh @ x                      # row i of x, no indexing op
        row = jnp.maximum(jnp.dot(a, a) + yy - 2 * (y @ a), 0)
        return oh[:, None] * row[None, :]
    def step(t, acc):
        return acc + 0.5 * one(t) + 0.5 * one(t - 1)
    d2 = jax.lax.fori_loop(0, N_MAX + 1, step, jnp.zeros((N, y.shape[0]), x.dtype))
    return {"d2": d2, "d": jnp.sqrt(d2)}
