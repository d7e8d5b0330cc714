"""Honest: a branch on the parity of N with no loop in it. An even N is split in two halves,
each vmapped (a different, still vectorized program); an odd N is vmapped whole."""

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
    n = x.shape[0]
    if n % 2 == 0:
        h = n // 2
        return out(jnp.concatenate([vectorized(x[:h], y), vectorized(x[h:], y)]))
    return out(vectorized(x, y))
