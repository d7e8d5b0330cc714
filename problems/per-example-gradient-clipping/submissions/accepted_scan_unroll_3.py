# Honest (red-team round 5 of 2026-12-06, issue #30): lax.scan over the examples with unroll=3,
# unrolled whole at B <= 3, one trip of three copies and the rest outside at B = 4 or 5.
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

    _, (w, b) = jax.lax.scan(step, 0.0, (x, y), unroll=3)
    return {"grads": {"w": jnp.mean(w, axis=0), "b": jnp.mean(b)}}
