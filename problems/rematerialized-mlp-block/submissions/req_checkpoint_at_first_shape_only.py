# Cheat (issue 41, "the program that runs is not the one the report read"): the honest
# checkpoint(dots_saveable) block at the first test's shape (B, D, H) = (1, 2, 3) only, the
# plain block (no checkpoint: the tanh is saved) at every other shape. The report once read one
# trace, at the first signature; it now reads every signature's exported program.
import jax
import jax.numpy as jnp


def block(p, x):
    return x + jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


def solve(params, x, y):
    first = (x.shape[0], x.shape[1], params["w1"].shape[1]) == (1, 2, 3)
    run = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable) if first else block

    def loss_fn(p):
        return jnp.mean((run(p, x) - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return {"loss": loss, "grads": grads}
