# Issue 41, own form: the rate looked up in a dict keyed by step (a TypeError: a traced array
# is not hashable). With step concrete the lookup works: requirement failed.
import math

import jax.numpy as jnp


def schedule(t):
    if t < 100:
        return 0.1 * t / 100
    return 0.001 + 0.0495 * (1 + math.cos(math.pi * min((t - 100) / 900, 1.0)))


RATES = {t: schedule(t) for t in range(2001)}


def solve(step, w, g):
    lr = jnp.float32(RATES[step])
    return {"lr": lr, "w": w - lr * g}
