# Wrong answer: wraps the gradients in 24 levels of tuples. The grader decodes at most 16
# levels of output nesting and says so, instead of comparing anything.
import jax
import jax.numpy as jnp


def block(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return x + h @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    out = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)(params, x)
    return jnp.mean((out - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    nested = grads
    for _ in range(24):
        nested = (nested,)
    return {"loss": loss, "grads": nested}
