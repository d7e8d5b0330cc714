# Clips the w part and the b part of each example's gradient to max_norm separately, instead of
# one norm over both.
import jax
import jax.numpy as jnp


def loss(params, x_i, y_i):
    return 0.5 * (x_i @ params["w"] + params["b"] - y_i) ** 2


def solve(params, x, y, max_norm):
    g = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(params, x, y)
    norm_w = jnp.linalg.norm(g["w"], axis=1)
    norm_b = jnp.abs(g["b"])
    w = g["w"] * (max_norm / jnp.maximum(norm_w, max_norm))[:, None]
    b = g["b"] * (max_norm / jnp.maximum(norm_b, max_norm))
    return {"grads": {"w": jnp.mean(w, axis=0), "b": jnp.mean(b)}}
