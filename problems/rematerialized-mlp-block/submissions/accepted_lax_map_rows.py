# Accepted: per-row value_and_grad under lax.map, then summed.
import jax
import jax.numpy as jnp


def row_loss(params, xi, yi, n):
    block = jax.checkpoint(
        lambda p, x: x + jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"],
        policy=jax.checkpoint_policies.dots_saveable,
    )
    return jnp.sum((block(params, xi[None]) - yi[None]) ** 2) / n


def solve(params, x, y):
    vg = jax.value_and_grad(row_loss)
    losses, grads = jax.lax.map(lambda row: vg(params, row[0], row[1], x.size), (x, y))
    return {"loss": jnp.sum(losses), "grads": jax.tree_util.tree_map(lambda g: g.sum(0), grads)}
