# Issue 41, own form: the step counted as the length of an array of `step` elements
# (jnp.ones((step,)): a shape must be concrete, a TypeError). With step concrete it traces:
# requirement failed. (jnp.ones((jnp.minimum(step, 2000),)) would fail with any step: the
# minimum is staged into the program, so it is no shape either way, and stays a runtime error.)
import jax.numpy as jnp


def solve(step, w, g):
    done = jnp.ones((step,), jnp.float32).sum()
    warm = 0.1 * done / 100
    t = jnp.clip((done - 100) / 900, 0.0, 1.0)
    cosine = 0.001 + 0.0495 * (1 + jnp.cos(jnp.pi * t))
    lr = jnp.where(done < 100, warm, cosine)
    return {"lr": lr, "w": w - lr * g}
