# The statement's own "skip the first step" form (carry starts at x[0],
# jnp.where(t == 0, ema, update)), with the step index from np.arange(T) (a NumPy array, a
# dense constant in the program, not an iota) instead of jnp.arange(T). Honest: should be
# accepted (only the first step leaves the update out).
import jax
import jax.numpy as jnp
import numpy as np


def solve(x, alpha):
    def step(ema, tx):
        t, row = tx
        ema = jnp.where(t == 0, ema, alpha * row + (1 - alpha) * ema)
        return ema, ema

    _, out = jax.lax.scan(step, x[0], (np.arange(x.shape[0]), x))
    return {"ema": out}
