# Accepted: an honest shape-dependent solution. Even batches are reduced pair by pair, odd ones
# in one mean; both are right. `B % 2 == 0` cannot be decided on a symbolic batch size B, so the
# grader exports one program per concrete input shape, and each one is right.
import jax
import jax.numpy as jnp


def block(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return x + h @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    out = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)(params, x)
    sq = (out - y) ** 2
    b, d = x.shape
    if b % 2 == 0:
        pairs = sq.reshape(b // 2, 2, d)
        return jnp.mean(jnp.mean(pairs, axis=1))
    return jnp.mean(sq)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
