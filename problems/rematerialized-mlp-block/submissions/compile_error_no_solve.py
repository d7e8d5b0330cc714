# Compile error: the entry point is misspelled, so there is no top-level `solve`.
import jax
import jax.numpy as jnp


def block(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return x + h @ params["w2"] + params["b2"]


def solution(params, x, y):
    def loss_fn(p):
        out = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)(p, x)
        return jnp.mean((out - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return {"loss": loss, "grads": grads}
