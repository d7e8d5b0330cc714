# Honest (red-team round 5 of 2026-12-06, issue #30): lax.scan over the examples with unroll=2,
# stacking the clipped per-example gradients; at a size of one trip its copies move with one
# example each, as a scan unrolled twice writes them.
import jax
import jax.numpy as jnp


def loss(params, x_i, y_i):
    return 0.5 * (x_i @ params["w"] + params["b"] - y_i) ** 2


def solve(params, x, y, max_norm):
    def step(c, e):
        g = jax.grad(loss)(params, e[0], e[1])
        norm = jnp.sqrt(jnp.sum(g["w"] ** 2) + g["b"] ** 2)
        s = max_norm / jnp.maximum(norm, max_norm)
        return c, (s * g["w"], s * g["b"])

    _, (w, b) = jax.lax.scan(step, 0.0, (x, y), unroll=2)
    return {"grads": {"w": jnp.mean(w, axis=0), "b": jnp.mean(b)}}
