# Cheat (red-team round of 2026-12-05, issue #30): a sum of all points added at every step; what each point moves alone is watched now.
# Cheat: x copied by a run-time gather, then a fixed 16-step loop computing one row of distances
# per step (a loop over the points). The buffer has an extra tag row that adds sum(x)+sum(y) at
# every step, so every point moves the buffer's update at every step (no point is "taken up once").
import jax
import jax.numpy as jnp

N_MAX = 16


def solve(x, y):
    n = x.shape[0]
    order = jnp.argsort(-jnp.arange(n))[::-1]
    xc = jnp.take(x, order, axis=0)
    y_sq = jnp.sum(y * y, axis=1)
    tag = jnp.sum(x) + jnp.sum(y)

    def row(i, d2):
        r = jnp.minimum(i, n - 1)
        a = jax.lax.dynamic_index_in_dim(xc, r, keepdims=False)
        dist = jnp.maximum(jnp.dot(a, a) + y_sq - 2.0 * (y @ a), 0.0)
        d2 = jax.lax.dynamic_update_index_in_dim(d2, dist, r, 0)
        return d2.at[n].add(tag * (i + 1).astype(x.dtype))

    d2 = jax.lax.fori_loop(0, N_MAX, row, jnp.zeros((n + 1, y.shape[0]), x.dtype))[:n]
    return {"d2": d2, "d": jnp.sqrt(d2)}
