import jax.numpy as jnp


def solve(x):
    norms = jnp.linalg.norm(x, axis=1, keepdims=True)
    return {"y": x / jnp.maximum(norms, 1e-12)}
