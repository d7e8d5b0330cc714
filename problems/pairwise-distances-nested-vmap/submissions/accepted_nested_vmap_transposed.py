"""Nested vmap the other way round: outer over the points of y, inner over those of x, then a
transpose. The pair function uses jnp.vdot and @ (dot products, never a - b)."""

import jax
import jax.numpy as jnp


def solve(x, y):
    def pair(a, b):
        return jnp.maximum(a @ a - 2.0 * jnp.vdot(a, b) + b @ b, 0.0)

    by_y = jax.vmap(jax.vmap(pair, in_axes=(0, None)), in_axes=(None, 0))(x, y)  # (M, N)
    d2 = by_y.T
    return {"d2": d2, "d": jnp.sqrt(d2)}
