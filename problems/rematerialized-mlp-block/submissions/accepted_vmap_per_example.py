# Accepted: per-example value_and_grad under vmap, then summed.
import jax
import jax.numpy as jnp


def example_loss(params, xi, yi, n):
    block = jax.checkpoint(
        lambda p, x: x + jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"],
        policy=jax.checkpoint_policies.dots_saveable,
    )
    return jnp.sum((block(params, xi) - yi) ** 2) / n


def solve(params, x, y):
    vg = jax.vmap(jax.value_and_grad(example_loss), in_axes=(None, 0, 0, None))
    losses, grads = vg(params, x, y, x.size)
    return {"loss": jnp.sum(losses), "grads": jax.tree_util.tree_map(lambda g: g.sum(0), grads)}
