# Right numbers, with a lax loop over the examples unrolled 4 times: at B = 3 the whole loop is
# unrolled (3 copies of its body), at B = 5 and 7 it is one step of 4 copies plus 1 and 3 left
# over, so the program grows with B at the judge's probe sizes. The message names the unroll.
import jax
import jax.numpy as jnp


def loss(params, x_i, y_i):
    return 0.5 * (x_i @ params["w"] + params["b"] - y_i) ** 2


def solve(params, x, y, max_norm):
    def body(i, total):
        g = jax.grad(loss)(params, x[i], y[i])
        norm = jnp.sqrt(jnp.sum(g["w"] ** 2) + g["b"] ** 2)
        scale = max_norm / jnp.maximum(norm, max_norm)
        return {"w": total["w"] + scale * g["w"], "b": total["b"] + scale * g["b"]}

    zero = {"w": jnp.zeros_like(params["w"]), "b": jnp.zeros_like(params["b"])}
    total = jax.lax.fori_loop(0, x.shape[0], body, zero, unroll=4)
    n = x.shape[0]
    return {"grads": {"w": total["w"] / n, "b": total["b"] / n}}
