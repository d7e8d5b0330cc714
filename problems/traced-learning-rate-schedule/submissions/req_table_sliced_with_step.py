# Issue 41: a table of every step's rate, sliced with the step (an IndexError: slice bounds must
# be static). With step concrete the same trace works, so the step being traced is the cause.
import math

import jax.numpy as jnp


def schedule(t):
    if t < 100:
        return 0.1 * t / 100
    return 0.001 + 0.0495 * (1 + math.cos(math.pi * min((t - 100) / 900, 1.0)))


TABLE = [schedule(t) for t in range(2001)]


def solve(step, w, g):
    lr = jnp.asarray(TABLE, jnp.float32)[: step + 1][-1]
    return {"lr": lr, "w": w - lr * g}
