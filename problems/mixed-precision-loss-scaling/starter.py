import jax  # noqa: F401  (you will need jax.grad)
import jax.numpy as jnp  # noqa: F401

LEARNING_RATE = 1e-3
GROWTH_INTERVAL = 4


def solve(params, x, y, loss_scale, good_steps):
    """One mixed-precision SGD step with dynamic loss scaling.

    params:     {"w1": (D, H), "b1": (H,), "w2": (H,), "b2": ()}, float32 master weights
    x:          float32 (B, D);  y: float32 (B,)
    loss_scale: float32 (), a power of two;  good_steps: int32 (), in 0..3

    Forward and backward in bfloat16: h = tanh(x @ w1 + b1), pred = h @ w2 + b2 on bfloat16
    copies; loss = mean((float32(pred) - y) ** 2) in float32. Differentiate loss * loss_scale
    with respect to the float32 params, divide the gradients by loss_scale. If every scaled
    gradient is finite: params -= LEARNING_RATE * grads, good_steps += 1, and when good_steps
    reaches GROWTH_INTERVAL the scale doubles and good_steps restarts at 0. Otherwise: params
    unchanged, grads all zeros, loss_scale halved, good_steps = 0.

    Return {"params": {...}, "grads": {...}, "loss_scale": float32 (), "good_steps": int32 ()}.
    """
    # TODO: a loss function that casts params and x to jnp.bfloat16.
    # TODO: jax.grad of loss * loss_scale; unscale; check jnp.isfinite.
    # TODO: the update, skipped with jnp.where when a gradient is not finite.
    # TODO: the new loss_scale and good_steps.
    raise NotImplementedError("solve is not written yet")
