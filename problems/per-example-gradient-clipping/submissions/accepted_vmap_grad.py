# jax.vmap(jax.grad(...)) for the per-example gradients; one norm over both leaves.
import jax
import jax.numpy as jnp


def loss(params, x_i, y_i):
    return 0.5 * (x_i @ params["w"] + params["b"] - y_i) ** 2


def solve(params, x, y, max_norm):
    g = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(params, x, y)
    norm = jnp.sqrt(jnp.sum(g["w"] ** 2, axis=1) + g["b"] ** 2)
    scale = jnp.minimum(1.0, max_norm / norm)  # norm 0: max_norm / 0 = inf, min(1, inf) = 1

    def clip(leaf):  # scale (B,) broadcast over each leaf's trailing axes
        return leaf * scale.reshape((-1,) + (1,) * (leaf.ndim - 1))

    clipped = jax.tree_util.tree_map(clip, g)
    return {"grads": jax.tree_util.tree_map(lambda leaf: jnp.mean(leaf, axis=0), clipped)}
