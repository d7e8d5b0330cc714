# Requirement failed (spec level only): dots_with_no_batch_dims_saveable is not the policy the
# problem asks for. For these 2-D inputs x @ w1 has no batch dimensions, so this policy saves
# exactly the same dots as dots_saveable: the exported program is identical to the reference's
# and the program-level requirement (tanh recomputed from the saved x·W1) passes.
import jax
import jax.numpy as jnp


def block(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return x + h @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    policy = jax.checkpoint_policies.dots_with_no_batch_dims_saveable
    out = jax.checkpoint(block, policy=policy)(params, x)
    return jnp.mean((out - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
