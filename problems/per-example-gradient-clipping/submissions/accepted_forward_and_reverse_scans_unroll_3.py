# Honest (red-team round 6 of 2026-12-06, issue #30): per-example gradients in a lax.scan over the examples (unroll=3), then the clipping
# and the sum in a second lax.scan over them run backwards (reverse=True, unroll=3). Both stay
# rolled loops over the examples, which the statement allows (unroll 2 or 3 too).
import jax
import jax.numpy as jnp


def loss(params, x_i, y_i):
    return 0.5 * (x_i @ params["w"] + params["b"] - y_i) ** 2


def solve(params, x, y, max_norm):
    def grads(c, e):
        g = jax.grad(loss)(params, e[0], e[1])
        return c, (g["w"], g["b"])

    _, (gw, gb) = jax.lax.scan(grads, 0.0, (x, y), unroll=3)

    def clip(c, g):
        w, b = g
        norm = jnp.sqrt(jnp.sum(w * w) + b * b)
        s = max_norm / jnp.maximum(norm, max_norm)
        return (c[0] + s * w, c[1] + s * b), None

    zero = (jnp.zeros_like(params["w"]), jnp.zeros_like(params["b"]))
    (tw, tb), _ = jax.lax.scan(clip, zero, (gw, gb), reverse=True, unroll=3)
    n = x.shape[0]
    return {"grads": {"w": tw / n, "b": tb / n}}
