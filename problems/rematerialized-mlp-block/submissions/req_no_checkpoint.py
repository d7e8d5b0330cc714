# Requirement failed: correct numbers, but no jax.checkpoint at all, so autodiff stores the tanh.
import jax
import jax.numpy as jnp


def loss_fn(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    out = x + h @ params["w2"] + params["b2"]
    return jnp.mean((out - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
