# A scan of T steps carrying the average, fed rows a Python loop slices out one by one: the loop
# is unrolled into T slices of x, so the program grows with T. The examples alone have no two
# sizes of T to compare, so the judge compares its own probe sizes: it fails in run mode too.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    rows = []
    for t in range(x.shape[0]):
        rows.append(x[t])

    def step(ema, row):
        ema = alpha * row + (1 - alpha) * ema
        return ema, ema

    _, out = jax.lax.scan(step, x[0], jnp.stack(rows))
    return {"ema": out}
