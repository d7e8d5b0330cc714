"""The textbook pair function sum((a - b)^2): exact, but under nested vmap a - b becomes the
(N, M, D) tensor of every coordinate difference."""

import jax
import jax.numpy as jnp


def solve(x, y):
    def pair(a, b):
        diff = a - b
        return jnp.sum(diff * diff)

    d2 = jax.vmap(jax.vmap(pair, (None, 0)), (0, None))(x, y)
    return {"d2": d2, "d": jnp.sqrt(d2)}
