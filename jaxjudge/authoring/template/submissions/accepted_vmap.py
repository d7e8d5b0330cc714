import jax
import jax.numpy as jnp


def solve(x):
    def one(row):
        return row / jnp.maximum(jnp.linalg.norm(row), 1e-12)

    return {"y": jax.vmap(one)(x)}
