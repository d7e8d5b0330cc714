# Time limit exceeded: solve never returns (a forgotten loop exit), so tracing never finishes.
import jax.numpy as jnp


def solve(params, x, y):
    step = 0
    while True:
        step += 1
    return {"loss": jnp.zeros(()), "grads": params}
