# int(step) to compute the schedule in plain Python: the step's value is not known while
# tracing.
import math

import jax.numpy as jnp


def schedule(t):
    if t < 100:
        return 0.1 * t / 100
    return 0.001 + 0.0495 * (1 + math.cos(math.pi * min((t - 100) / 900, 1.0)))


def solve(step, w, g):
    lr = jnp.float32(schedule(int(step)))
    return {"lr": lr, "w": w - lr * g}
