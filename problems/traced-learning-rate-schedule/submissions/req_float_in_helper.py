# float() on the step inside a plain (not jitted) helper called with it under another name.
import math

import jax.numpy as jnp


def phase_of(count):
    t = float(count)
    if t < 100:
        return 0.1 * t / 100
    return 0.001 + 0.0495 * (1 + math.cos(math.pi * min((t - 100) / 900, 1.0)))


def solve(step, w, g):
    lr = jnp.float32(phase_of(step))
    return {"lr": lr, "w": w - lr * g}
