# Accepted: the gradients by jax.jacrev (reverse mode of a scalar: the gradient), the loss
# computed on its own.
import jax
import jax.numpy as jnp

block = jax.checkpoint(
    lambda p, x: x + jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"],
    policy=jax.checkpoint_policies.dots_saveable,
)


def solve(params, x, y):
    def loss_fn(p):
        return jnp.mean((block(p, x) - y) ** 2)

    return {"loss": loss_fn(params), "grads": jax.jacrev(loss_fn)(params)}
