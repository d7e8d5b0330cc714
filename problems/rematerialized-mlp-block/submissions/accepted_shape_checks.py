# Accepted: checks and arithmetic on shapes that hold for every size (the shapes of x and y are
# equal, x's width is w1's height, a batch is never empty) are decided on symbolic dimensions
# too, so this solution keeps the single shape-polymorphic export.
import jax
import jax.numpy as jnp


def block(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return x + h @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    out = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)(params, x)
    count = x.shape[0] * x.shape[1]
    return jnp.sum((out - y) ** 2) / count


def solve(params, x, y):
    assert x.shape == y.shape, (x.shape, y.shape)
    assert x.shape[1] == params["w1"].shape[0] and x.shape[1] != 0
    if not x.shape[0] or x.shape[0] < 1:
        raise ValueError(f"empty batch: {x.shape}")
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
