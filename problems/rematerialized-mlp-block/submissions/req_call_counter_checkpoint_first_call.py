# Cheat (issue 41): a call counter. `int(B)` sends stage A to one trace per input shape; the
# first call of solve checkpoints the block honestly, every later call (the other shapes)
# saves the tanh. Each signature's report is now read from the trace that signature exports.
import jax
import jax.numpy as jnp

CALLS = [0]


def block(p, x):
    return x + jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


def solve(params, x, y):
    CALLS[0] += 1
    scale = 1.0 / int(x.shape[0])  # a concrete batch size: one trace per shape
    honest = CALLS[0] <= 2  # the symbolic attempt, then the first shape
    run = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable) if honest else block

    def loss_fn(p):
        return jnp.sum((run(p, x) - y) ** 2) * scale / x.shape[1]

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return {"loss": loss, "grads": grads}
