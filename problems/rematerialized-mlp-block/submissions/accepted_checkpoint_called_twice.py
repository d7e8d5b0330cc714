# Accepted (issue #30, honest but unusual): the checkpointed block is a helper called twice, the
# loss the mean of two equal halves. Both calls are differentiated and both regions' tanh reach
# the gradients, so both are live.
import jax
import jax.numpy as jnp


@jax.checkpoint
def _unused(v):  # a checkpoint without a policy, never called: not a region of the program
    return jnp.tanh(v)


def block(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return x + h @ params["w2"] + params["b2"]


ckpt_block = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)


def loss_fn(params, x, y):
    first = jnp.mean((ckpt_block(params, x) - y) ** 2)
    second = jnp.mean((ckpt_block(params, x) - y) ** 2)
    return 0.5 * first + 0.5 * second


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
