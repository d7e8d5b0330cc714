# Right numbers, but a Python loop over the rows: the program grows with B.
import jax.numpy as jnp


def solve(x):
    rows = [x[i] / jnp.maximum(jnp.linalg.norm(x[i]), 1e-12) for i in range(x.shape[0])]
    return {"y": jnp.stack(rows)}
