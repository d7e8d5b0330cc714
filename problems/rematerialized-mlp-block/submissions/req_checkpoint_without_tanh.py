# Requirement failed: only the matmuls are checkpointed; the tanh sits outside the region, so it
# is stored for the backward pass, not recomputed. Both levels fail.
import jax
import jax.numpy as jnp

matmul = jax.checkpoint(jnp.matmul, policy=jax.checkpoint_policies.dots_saveable)


def loss_fn(params, x, y):
    h = jnp.tanh(matmul(x, params["w1"]) + params["b1"])
    out = x + matmul(h, params["w2"]) + params["b2"]
    return jnp.mean((out - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
