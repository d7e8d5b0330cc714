"""One vmap over the rows of x: each row's M distances from a matrix-vector product with y."""

import jax
import jax.numpy as jnp


def solve(x, y):
    y_sq = jnp.sum(y * y, axis=1)  # (M,)

    def row(a):  # a: (D,) -> (M,)
        return jnp.maximum(jnp.dot(a, a) + y_sq - 2.0 * (y @ a), 0.0)

    d2 = jax.vmap(row)(x)
    return {"d2": d2, "d": jnp.sqrt(d2)}
