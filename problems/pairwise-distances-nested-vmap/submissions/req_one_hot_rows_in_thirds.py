# Cheat (issue #30, a form of red-team round 5's halves): a fixed 18-step loop over the points
# (padded to N = 16), each row picked by a one-hot product and folded in thirds at three
# consecutive steps. A loop over the points.
import jax
import jax.numpy as jnp

N_MAX = 16


def solve(x, y):
    N = x.shape[0]
    yy = jnp.sum(y * y, axis=1)

    def one(i):
        oh = (jnp.arange(N) == i).astype(x.dtype)
        a = oh @ x
        row = jnp.maximum(jnp.dot(a, a) + yy - 2 * (y @ a), 0)
        return oh[:, None] * row[None, :]

    def step(t, acc):
        return acc + (one(t) + one(t - 1) + one(t - 2)) / 3

    d2 = jax.lax.fori_loop(0, N_MAX + 2, step, jnp.zeros((N, y.shape[0]), x.dtype))
    return {"d2": d2, "d": jnp.sqrt(d2)}
