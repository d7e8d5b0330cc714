# Differentiates the quantiser itself: the true derivative of a step is 0 wherever it exists,
# so dx is all zeros (the very problem the straight-through estimator solves).
import jax
import jax.numpy as jnp


def q(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def solve(x, g):
    y, vjp = jax.vjp(jnp.sign, x)
    (dx,) = vjp(g)
    return {"y": q(x), "dx": dx}
