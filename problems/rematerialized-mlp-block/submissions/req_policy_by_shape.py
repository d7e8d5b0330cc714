# Cheat (issue 41, own form): the checkpoint is everywhere, but its policy depends on the
# shape: dots_saveable at the first test's shape, everything_saveable (the tanh saved, nothing
# recomputed) at every other. The spec-level requirement is checked on every signature's
# program.
import jax
import jax.numpy as jnp


def block(p, x):
    return x + jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


def solve(params, x, y):
    cp = jax.checkpoint_policies
    first = x.shape[0] == 1 and params["w1"].shape[1] == 3
    policy = cp.dots_saveable if first else cp.everything_saveable
    ckpt = jax.checkpoint(block, policy=policy)

    def loss_fn(p):
        return jnp.mean((ckpt(p, x) - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return {"loss": loss, "grads": grads}
