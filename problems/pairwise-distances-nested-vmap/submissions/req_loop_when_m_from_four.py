"""Right numbers; a Python loop over the points of y only for M >= 4 (a threshold inside the
allowed range): over M = 4, 5 and 6 it grows by the same operations per point."""

import jax
import jax.numpy as jnp


def pair(a, b):
    return jnp.maximum(jnp.dot(a, a) + jnp.dot(b, b) - 2 * jnp.dot(a, b), 0)


def vectorized(x, y):
    return jax.vmap(jax.vmap(pair, (None, 0)), (0, None))(x, y)


def looped(x, y):
    return jnp.stack([jax.vmap(pair, (None, 0))(x[i], y) for i in range(x.shape[0])])


def out(d2):
    return {"d2": d2, "d": jnp.sqrt(d2)}



def solve(x, y):
    if y.shape[0] >= 4:
        return out(jnp.stack([jax.vmap(pair, (0, None))(x, y[j]) for j in range(y.shape[0])], 1))
    return out(vectorized(x, y))
