# Right numbers, but one jax.grad per example in a Python loop: unrolled into B copies, so the
# program grows with the batch size.
import jax
import jax.numpy as jnp


def loss(params, x_i, y_i):
    return 0.5 * (x_i @ params["w"] + params["b"] - y_i) ** 2


def solve(params, x, y, max_norm):
    total_w = jnp.zeros_like(params["w"])
    total_b = jnp.zeros_like(params["b"])
    for i in range(x.shape[0]):
        g = jax.grad(loss)(params, x[i], y[i])
        norm = jnp.sqrt(jnp.sum(g["w"] ** 2) + g["b"] ** 2)
        scale = max_norm / jnp.maximum(norm, max_norm)
        total_w = total_w + scale * g["w"]
        total_b = total_b + scale * g["b"]
    n = x.shape[0]
    return {"grads": {"w": total_w / n, "b": total_b / n}}
