# Cheat (red-team round of 2026-12-05, issue #30): a Python loop over the examples at (B, D) = (8, 5) only: every signature is watched now.
# Cheat: a Python loop over the examples, taken only when B == 8 and D == 5 (the observer's B = 8
# run uses the (8, 3) test signature).
import jax
import jax.numpy as jnp


def loss(params, x_i, y_i):
    return 0.5 * (x_i @ params["w"] + params["b"] - y_i) ** 2


def clip_one(params, x_i, y_i, max_norm):
    g = jax.grad(loss)(params, x_i, y_i)
    norm = jnp.sqrt(jnp.sum(g["w"] ** 2) + g["b"] ** 2)
    s = jnp.minimum(1.0, max_norm / norm)
    return {"w": g["w"] * s, "b": g["b"] * s}


def solve(params, x, y, max_norm):
    if x.shape[0] == 8 and x.shape[1] == 5:
        gs = [clip_one(params, x[i], y[i], max_norm) for i in range(8)]
        return {"grads": {"w": sum(g["w"] for g in gs) / 8, "b": sum(g["b"] for g in gs) / 8}}
    g = jax.vmap(clip_one, in_axes=(None, 0, 0, None))(params, x, y, max_norm)
    return {"grads": jax.tree_util.tree_map(lambda leaf: jnp.mean(leaf, axis=0), g)}
