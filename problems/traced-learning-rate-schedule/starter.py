import jax  # noqa: F401  (jax.lax.cond is one way to branch)
import jax.numpy as jnp  # noqa: F401

PEAK_LR = 0.1
MIN_LR = 0.001
WARMUP = 100
TOTAL = 1000


def solve(step, w, g):
    """One SGD step with a warmup + cosine learning-rate schedule.

    step: int32 scalar array (shape ()), 0 <= step <= 2000: a TRACED value, not a Python int
    w, g: float32 arrays of shape (D,): the parameters and their gradient

    lr = PEAK_LR * step / WARMUP                                   if step < WARMUP
    lr = MIN_LR + (PEAK_LR - MIN_LR) * (1 + cos(pi * p)) / 2        otherwise, where
         p = min((step - WARMUP) / (TOTAL - WARMUP), 1)             (so lr = MIN_LR from TOTAL on)

    Return {"lr": float32 scalar, "w": w - lr * g}.
    No Python `if` on step (use jnp.where or jax.lax.cond), no int(step) / float(step).
    """
    # TODO: convert step to float32 for the arithmetic.
    # TODO: compute the warmup value and the cosine value.
    # TODO: pick one with jnp.where (or jax.lax.cond) and apply the update.
    raise NotImplementedError("solve is not written yet")
