# Cheat (execution evidence): x copied by a 1x1 convolution with an identity kernel, then one
# point per step of a fixed 16-step loop.
import jax
import jax.numpy as jnp

N_MAX = 16


def solve(x, y):
    n, d = x.shape
    kernel = jnp.eye(d, dtype=x.dtype)[:, :, None]  # (out, in, width 1)
    xc = jax.lax.conv_general_dilated(x[:, :, None], kernel, (1,), "VALID")[:, :, 0]
    y_sq = jnp.sum(y * y, axis=1)

    def row(i, d2):
        r = jnp.minimum(i, n - 1)
        a = jax.lax.dynamic_slice_in_dim(xc, r, 1)[0]
        dist = jnp.maximum(jnp.dot(a, a) + y_sq - 2.0 * (y @ a), 0.0)
        return jax.lax.dynamic_update_slice_in_dim(d2, dist[None], r, 0)

    d2 = jax.lax.fori_loop(0, N_MAX, row, jnp.zeros((n, y.shape[0]), x.dtype))
    return {"d2": d2, "d": jnp.sqrt(d2)}
