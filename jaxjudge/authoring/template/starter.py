import jax.numpy as jnp


def solve(x):
    """Return {"y": x with every row scaled to unit norm}."""
    raise NotImplementedError
