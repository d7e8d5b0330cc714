# Decoy: reads step only as 0 * step, so the program "has" the step, and returns the peak
# learning rate: the outputs do not depend on the step (and the numbers are wrong).
import jax.numpy as jnp


def solve(step, w, g):
    lr = jnp.float32(0.1) + 0 * step.astype(jnp.float32)
    return {"lr": lr, "w": w - lr * g}
