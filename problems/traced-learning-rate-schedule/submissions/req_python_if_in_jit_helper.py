# A Python `if` on the step inside a jitted helper: the helper's own argument is the tracer
# that Python is asked to turn into a bool (JAX names `t`, the helper's parameter, not `step`).
import math

import jax
import jax.numpy as jnp


@jax.jit
def schedule(t):
    if t < 100:
        return 0.1 * t.astype(jnp.float32) / 100
    p = jnp.minimum((t - 100) / 900, 1.0)
    return 0.001 + 0.0495 * (1 + jnp.cos(math.pi * p))


def solve(step, w, g):
    lr = schedule(step).astype(jnp.float32)
    return {"lr": lr, "w": w - lr * g}
