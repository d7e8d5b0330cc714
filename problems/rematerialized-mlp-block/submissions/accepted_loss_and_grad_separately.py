# Accepted: the loss comes from a plain forward call and the gradients from jax.grad; both go
# through the same checkpointed block (the forward one is simply never differentiated).
import jax
import jax.numpy as jnp

policy = jax.checkpoint_policies.dots_saveable


def block(params, x):
    pre = x @ params["w1"] + params["b1"]
    return x + jnp.tanh(pre) @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    out = jax.checkpoint(block, policy=policy)(params, x)
    diff = out - y
    return jnp.sum(diff * diff) / diff.size


def solve(params, x, y):
    loss = loss_fn(params, x, y)
    grads = jax.grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
