# Honest, unusual (issue #30): a lax.scan over (t, x[t]) whose first step takes the row as it
# is, the others the average, the first step found by counting the rows before this one with
# an index vector (jnp.sum(jnp.arange(T) < t) == 0) rather than by t == 0: only the first
# step sets the starting value, so it passes.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    rows = jnp.arange(x.shape[0])

    def step(ema, tx):
        t, row = tx
        before = jnp.sum(rows < t)
        ema = jnp.where(before == 0, row, alpha * row + (1 - alpha) * ema)
        return ema, ema

    _, out = jax.lax.scan(step, jnp.zeros_like(x[0]), (rows, x))
    return {"ema": out}
