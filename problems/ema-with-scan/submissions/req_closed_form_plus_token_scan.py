# Right numbers from the T x T weight matrix, plus 1e-30 times a T-step scan that keeps a
# running sum of the rows: the scan carries a value computed from itself and x at every step,
# and it reaches the output, but the average is computed beside it (x reaches the output
# outside the loop), so the loop does not carry the work.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    steps = jnp.arange(x.shape[0])
    lag = steps[:, None] - steps[None, :]
    keep = 1 - alpha
    w = jnp.where(lag >= 0, alpha * keep ** jnp.maximum(lag, 0).astype(x.dtype), 0.0)
    w = w.at[:, 0].set(keep ** steps.astype(x.dtype))

    def step(total, row):
        return total + row, None

    total, _ = jax.lax.scan(step, jnp.zeros_like(x[0]), x)
    return {"ema": w @ x + 1e-30 * total}
