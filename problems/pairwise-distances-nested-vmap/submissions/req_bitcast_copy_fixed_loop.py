# Cheat (execution evidence): x round-tripped through its int32 bits (bitcast there and back),
# then one point per step of a fixed 16-step loop.
import jax
import jax.numpy as jnp

N_MAX = 16


def solve(x, y):
    n = x.shape[0]
    bits = jax.lax.bitcast_convert_type(x, jnp.int32)
    xc = jax.lax.bitcast_convert_type(bits ^ 0, jnp.float32)
    y_sq = jnp.sum(y * y, axis=1)

    def row(i, d2):
        r = jnp.minimum(i, n - 1)
        a = xc[r]
        dist = jnp.maximum(jnp.dot(a, a) + y_sq - 2.0 * (y @ a), 0.0)
        return d2.at[r].set(dist)

    d2 = jax.lax.fori_loop(0, N_MAX, row, jnp.zeros((n, y.shape[0]), x.dtype))
    return {"d2": d2, "d": jnp.sqrt(d2)}
