# Accepted: a lax.scan over the rows in which each row first goes through a feature map, here
# the identity (jnp.eye(D): a placeholder for a learned projection), then the usual update. A
# product with the identity gives the row back: still one row per step.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    proj = jnp.eye(x.shape[1], dtype=x.dtype)

    def step(ema, row):
        ema = alpha * (row @ proj) + (1 - alpha) * ema
        return ema, ema

    _, out = jax.lax.scan(step, x[0] @ proj, x)
    return {"ema": out * 1.0}
