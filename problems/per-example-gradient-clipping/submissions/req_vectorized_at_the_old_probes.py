# Once a known limit: a cheat that knows the judge's old probe shapes (B = 3, 5 and 7 with
# D = 3) and is vectorized there only, with a Python loop at every other shape. The probes now
# are B = 1 to 6, and over B = 2, 4 and 6 the program grows per example.
import jax
import jax.numpy as jnp


def loss(params, x_i, y_i):
    return 0.5 * (x_i @ params["w"] + params["b"] - y_i) ** 2


def clip_one(params, x_i, y_i, max_norm):
    g = jax.grad(loss)(params, x_i, y_i)
    norm = jnp.sqrt(jnp.sum(g["w"] ** 2) + g["b"] ** 2)
    scale = max_norm / jnp.maximum(norm, max_norm)
    return scale * g["w"], scale * g["b"]


def solve(params, x, y, max_norm):
    n = x.shape[0]
    if n in (3, 5, 7) and x.shape[1] == 3:
        w, b = jax.vmap(clip_one, in_axes=(None, 0, 0, None))(params, x, y, max_norm)
        return {"grads": {"w": w.mean(0), "b": b.mean()}}
    total_w, total_b = 0.0, 0.0
    for i in range(n):
        w, b = clip_one(params, x[i], y[i], max_norm)
        total_w, total_b = total_w + w, total_b + b
    return {"grads": {"w": total_w / n, "b": total_b / n}}
