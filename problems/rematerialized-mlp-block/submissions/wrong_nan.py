# Wrong answer: a debugging placeholder left in; the loss is NaN (the gradients are right).
import jax
import jax.numpy as jnp


def block(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return x + h @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    out = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)(params, x)
    return jnp.mean((out - y) ** 2)


def solve(params, x, y):
    _, grads = jax.value_and_grad(loss_fn)(params, x, y)
    loss = jnp.full((), jnp.nan, dtype=jnp.float32)  # TODO: plug the real loss back in
    return {"loss": loss, "grads": grads}
