# Honest: a branch on the parity of T with no Python loop in it: an odd T scans x, an even T
# scans the same rows through a reversed copy read back to front (scan(reverse=True) over x
# reversed): two programs of constant size, one loop of T steps each.
import jax
import jax.numpy as jnp


def step(alpha):
    def f(ema, row):
        ema = alpha * row + (1 - alpha) * ema
        return ema, ema
    return f


def scan_rows(x, alpha, rows):
    _, out = jax.lax.scan(step(alpha), x[0], rows)
    return {"ema": out}


def sliced_one_by_one(x):
    return jnp.stack([x[t] for t in range(x.shape[0])])



def solve(x, alpha):
    if x.shape[0] % 2 == 1:
        return scan_rows(x, alpha, x)
    _, out = jax.lax.scan(step(alpha), x[0], x[::-1], reverse=True)
    return {"ema": out[::-1]}
