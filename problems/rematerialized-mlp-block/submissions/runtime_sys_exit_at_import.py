# Runtime error: the learner's self-test runs at import time (no `if __name__ == "__main__":`
# guard) and ends the process with sys.exit(3), the number of checks it has not written yet.
import sys

import jax
import jax.numpy as jnp


def block(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return x + h @ params["w2"] + params["b2"]


def solve(params, x, y):
    def loss_fn(p):
        out = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)(p, x)
        return jnp.mean((out - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return {"loss": loss, "grads": grads}


def self_test() -> int:
    todo = ["loss value", "gradient shapes", "checkpoint in jaxpr"]
    print(f"{len(todo)} checks still to write: {', '.join(todo)}")
    return len(todo)


sys.exit(self_test())
