# Accepted: one scan over all T rows from a NaN carry ("no average yet"); each step takes
# the row itself while there is no average, else the usual mix. The jnp.where on the carried
# average picks element by element: it reads x one row per step.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    def step(prev, row):
        cur = jnp.where(jnp.isnan(prev), row, alpha * row + (1.0 - alpha) * prev)
        return cur, cur

    _, ema = jax.lax.scan(step, jnp.full(x.shape[1:], jnp.nan, x.dtype), x)
    return {"ema": ema}
