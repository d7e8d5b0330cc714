# Decoy: fetches the step's value on the host with jax.pure_callback and computes the schedule
# in Python there. The grader runs only the exported program: host callbacks are refused.
import math

import jax
import jax.numpy as jnp
import numpy as np


def schedule(t):
    t = int(t)
    if t < 100:
        return np.float32(0.1 * t / 100)
    return np.float32(0.001 + 0.0495 * (1 + math.cos(math.pi * min((t - 100) / 900, 1.0))))


def solve(step, w, g):
    lr = jax.pure_callback(schedule, jax.ShapeDtypeStruct((), jnp.float32), step)
    return {"lr": lr, "w": w - lr * g}
