# Right numbers, but the average is computed at once from 48 single rows of x read one by one
# (x[min(i, T - 1)] for i < 48, the largest T: the program does not grow with T) with a 48 x 48
# weight matrix, then carried through a T-step fori_loop. Each read is one row, but x is read
# at 48 places, more than a loop over its rows takes: it counts as reading all of x at once.
import jax
import jax.numpy as jnp

LARGEST = 48


def solve(x, alpha):
    t = x.shape[0]
    rows = jnp.stack([x[min(i, t - 1)] for i in range(LARGEST)])
    steps = jnp.arange(LARGEST)
    lag = steps[:, None] - steps[None, :]
    keep = 1 - alpha
    w = jnp.where(lag >= 0, alpha * keep ** jnp.maximum(lag, 0).astype(x.dtype), 0.0)
    w = w.at[:, 0].set(keep ** steps.astype(x.dtype))
    closed = (w @ rows)[:t]

    def body(i, out):
        return jnp.where(i == 0, closed, out) * 1.0 + 1e-30 * x[i]

    return {"ema": jax.lax.fori_loop(0, t, body, jnp.zeros_like(x))}
