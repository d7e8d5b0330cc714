# Honest (issue 41; a req_ sample before): an honest T-step scan, and the output's first row is
# x[0] copied in beside the loop (the scan's own first row is x[0] too). Stopped after k steps,
# the reference's first k averages: it passes.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    def step(ema, row):
        ema = alpha * row + (1 - alpha) * ema
        return ema, ema

    _, out = jax.lax.scan(step, x[0], x)
    return {"ema": jnp.concatenate([x[:1], out[1:]])}
