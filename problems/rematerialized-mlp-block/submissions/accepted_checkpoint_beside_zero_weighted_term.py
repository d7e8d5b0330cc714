# Accepted (issue #30, honest but unusual): the checkpointed block gives the loss, and a second,
# zero-weighted checkpoint of the tanh alone is added to it (a leftover of debugging). The dead
# region holds a tanh nothing uses; the live one is the block's, so the requirement holds.
import jax
import jax.numpy as jnp

policy = jax.checkpoint_policies.dots_saveable


def block(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return x + h @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    out = jax.checkpoint(block, policy=policy)(params, x)
    probe = jax.checkpoint(lambda p: jnp.tanh(p["b1"]), policy=policy)(params)
    return jnp.mean((out - y) ** 2) + 0.0 * jnp.sum(probe)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
