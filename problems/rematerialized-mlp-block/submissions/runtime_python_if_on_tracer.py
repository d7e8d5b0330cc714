# Runtime error: a Python `if` on a traced value cannot be traced (TracerBoolConversionError).
import jax
import jax.numpy as jnp


def block(params, x):
    pre = x @ params["w1"] + params["b1"]
    if jnp.max(jnp.abs(pre)) > 20.0:  # "skip the tanh when it is saturated anyway"
        return x + jnp.sign(pre) @ params["w2"] + params["b2"]
    return x + jnp.tanh(pre) @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    out = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)(params, x)
    return jnp.mean((out - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
