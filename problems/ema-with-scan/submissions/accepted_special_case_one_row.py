# Honest: Example 3 says the average of one row is that row, so T == 1 is returned as is (a
# Python if on a shape); every other T scans all rows from x[0]. A size of 1 needs no loop.
import jax


def solve(x, alpha):
    if x.shape[0] == 1:
        return {"ema": x}

    def step(ema, row):
        ema = alpha * row + (1 - alpha) * ema
        return ema, ema

    _, out = jax.lax.scan(step, x[0], x)
    return {"ema": out}
