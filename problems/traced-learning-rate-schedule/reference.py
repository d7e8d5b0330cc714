"""Trusted reference for "Traced learning-rate schedule".

The step is an int32 array: every branch of the schedule is a `jnp.where` on it, so one
exported program serves every step. The schedule is computed in w's dtype (float64 when the
margin check recomputes the truth), never by rounding to float32 inside.
"""

import jax
import jax.numpy as jnp

PEAK_LR = 0.1
MIN_LR = 0.001
WARMUP = 100
TOTAL = 1000


def solve(step: jax.Array, w: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
    """{"lr": (), "w": (D,)}: the schedule at `step`, and one SGD step w - lr * g."""
    t = step.astype(w.dtype)
    warm = PEAK_LR * t / WARMUP
    progress = jnp.clip((t - WARMUP) / (TOTAL - WARMUP), 0.0, 1.0)
    cosine = MIN_LR + 0.5 * (PEAK_LR - MIN_LR) * (1.0 + jnp.cos(jnp.pi * progress))
    lr = jnp.where(step < WARMUP, warm, cosine)
    return {"lr": lr, "w": w - lr * g}
