# The schedule in Python inside an inner jax.jit with the step as a static argument: one
# compile per step value, which is what a traced step avoids. The step is a tracer here, and a
# tracer cannot be a static argument.
import functools

import jax
import jax.numpy as jnp


@functools.partial(jax.jit, static_argnums=0)
def schedule(t):
    if t < 100:
        return jnp.float32(0.1 * t / 100)
    return jnp.float32(0.001 + 0.0495 * (1 + jnp.cos(jnp.pi * min((t - 100) / 900, 1.0))))


def solve(step, w, g):
    lr = schedule(step)
    return {"lr": lr, "w": w - lr * g}
