# Accepted: gradient accumulation. value_and_grad of the checkpointed block on one row per
# iteration of lax.fori_loop, loss and gradients summed in the loop carry.
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

    def body(i, carry):
        loss, grads = carry
        li, gi = vg(params, x[i], y[i], x.size)
        return loss + li, jax.tree_util.tree_map(jnp.add, grads, gi)

    start = (jnp.zeros((), x.dtype), jax.tree_util.tree_map(jnp.zeros_like, params))
    loss, grads = jax.lax.fori_loop(0, x.shape[0], body, start)
    return {"loss": loss, "grads": grads}
