# Right numbers, but a Python loop over time: the tracer unrolls it into T copies of the step,
# so the program has no loop and grows with T.
import jax.numpy as jnp


def solve(x, alpha):
    rows = [x[0]]
    for t in range(1, x.shape[0]):
        rows.append(alpha * x[t] + (1 - alpha) * rows[-1])
    return {"ema": jnp.stack(rows)}
