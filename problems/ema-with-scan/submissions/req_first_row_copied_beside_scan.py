# Right numbers and an honest T-step scan, but the output's first row is x[0] copied in beside
# the loop: x reaches the output outside the loop, which the requirement does not allow (a
# stated limit: the loop's own first row is already x[0], so return what the scan records).
import jax
import jax.numpy as jnp


def solve(x, alpha):
    def step(ema, row):
        ema = alpha * row + (1 - alpha) * ema
        return ema, ema

    _, out = jax.lax.scan(step, x[0], x)
    return {"ema": jnp.concatenate([x[:1], out[1:]])}
