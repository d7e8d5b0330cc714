# Cheat (red-team round of 2026-12-05, issue #30): a Python loop over the points at (N, M) = (8, 1) only: every signature is watched now.
# Cheat: a Python loop over the points of x, taken only when N == 8 and M == 1 (a test signature
# the observer's per-size runs do not pick: N = 8 is observed on (8, 6)).
import jax
import jax.numpy as jnp


def solve(x, y):
    y_sq = jnp.sum(y * y, axis=1)

    def row(a):
        return jnp.maximum(jnp.dot(a, a) + y_sq - 2.0 * (y @ a), 0.0)

    if x.shape[0] == 8 and y.shape[0] == 1:
        d2 = jnp.stack([row(x[i]) for i in range(8)])
    else:
        d2 = jax.vmap(row)(x)
    return {"d2": d2, "d": jnp.sqrt(d2)}
