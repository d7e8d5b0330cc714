# Wrong answer: also returns the gradient with respect to x inside "grads" (an extra key).
import jax
import jax.numpy as jnp


def block(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return x + h @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    out = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)(params, x)
    return jnp.mean((out - y) ** 2)


def solve(params, x, y):
    loss, (g_params, g_x) = jax.value_and_grad(loss_fn, argnums=(0, 1))(params, x, y)
    return {"loss": loss, "grads": {**g_params, "x": g_x}}
