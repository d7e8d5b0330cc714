# Wrong answer: a debugging branch left in poisons the loss for even batch sizes. Traced with a
# symbolic batch size B, `B % 2 == 0` cannot be decided and jax answers False, so the one
# shape-polymorphic program would be right for every B: the grader must notice the decision and
# grade what solve computes at each test's concrete shapes instead.
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
    if x.shape[0] % 2 == 0:  # TODO: remove (was checking the pairing code on even batches)
        loss = loss * jnp.nan
    return {"loss": loss, "grads": grads}
