# Right formula, but a Python `if` on the traced step: it cannot be traced (the value is only
# known when the program runs).
import math

import jax.numpy as jnp


def solve(step, w, g):
    if step < 100:
        lr = 0.1 * step / 100
    else:
        p = jnp.minimum((step - 100) / 900, 1.0)
        lr = 0.001 + 0.0495 * (1 + jnp.cos(math.pi * p))
    return {"lr": lr, "w": w - lr * g}
