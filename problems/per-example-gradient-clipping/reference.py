"""Trusted reference for "Per-Example Gradient Clipping".

jax.vmap(jax.grad(...)) gives every example's gradient at once; the clipping factor uses one norm
over w and b together. `max_norm / max(norm, max_norm)` equals min(1, max_norm / norm), is exactly
1 when the norm is at or below max_norm, and never divides by zero (max_norm > 0), so an example
with a zero gradient contributes exactly zero. No Python loop: the program is exported once with
B symbolic.
"""

import jax
import jax.numpy as jnp

Params = dict[str, jax.Array]


def _loss(params: Params, x_i: jax.Array, y_i: jax.Array) -> jax.Array:
    """One example's squared error, 0.5 (x_i . w + b - y_i)^2."""
    return 0.5 * (jnp.dot(x_i, params["w"]) + params["b"] - y_i) ** 2


def solve(params: Params, x: jax.Array, y: jax.Array, max_norm: jax.Array) -> dict:
    """{"grads": {"w": (D,), "b": ()}}: the batch mean of the clipped per-example gradients."""
    per_example = jax.vmap(jax.grad(_loss), in_axes=(None, 0, 0))(params, x, y)
    gw, gb = per_example["w"], per_example["b"]  # (B, D), (B,)
    norm = jnp.sqrt(jnp.sum(gw * gw, axis=1) + gb * gb)
    scale = max_norm / jnp.maximum(norm, max_norm)
    return {"grads": {"w": jnp.mean(scale[:, None] * gw, axis=0),
                      "b": jnp.mean(scale * gb)}}
