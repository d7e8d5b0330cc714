# Issue 41, "traced values misused in Python": the step read back from its own text,
# int(f"{step}"). Traced, the text is "JitTracer(int32[])" and int() raises a ValueError, not
# one of JAX's errors; stage A traces again with step concrete, which works, so the failure
# comes from step being traced: requirement failed, whatever Python raised.
import math

import jax.numpy as jnp


def schedule(t):
    if t < 100:
        return 0.1 * t / 100
    return 0.001 + 0.0495 * (1 + math.cos(math.pi * min((t - 100) / 900, 1.0)))


def solve(step, w, g):
    lr = jnp.float32(schedule(int(f"{step}")))
    return {"lr": lr, "w": w - lr * g}
