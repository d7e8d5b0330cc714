# Requirement failed: a forged jaxpr summary. While it is traced, solve walks up the stack to the
# tracing stage's globals and rebinds its summarizer so that it summarizes a textbook
# rematerialized block instead of this code, which has no checkpoint (the forward tanh is
# doubled, so x·W1 feeds two tanh ops). The spec-level check then reads a perfect summary, but
# the summary comes from the untrusted stage: it only counts when the exported program confirms
# it, and the program's backward pass reads the forward tanh.
import sys

import jax
import jax.numpy as jnp


def _good(params, x, y):
    def block(p, x):
        return x + jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]

    def loss(p):
        out = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)(p, x)
        return jnp.mean((out - y) ** 2)

    return jax.value_and_grad(loss)(params)


def _forge(params, x, y):
    frame = sys._getframe()
    while frame is not None:
        glob = frame.f_globals
        real = glob.get("summarize_jaxpr")
        if callable(real) and not getattr(real, "forged", False):
            good = jax.make_jaxpr(_good)(params, x, y).jaxpr

            def forged(_jaxpr, *args, **kwargs):
                return real(good, *args, **kwargs)

            forged.forged = True
            glob["summarize_jaxpr"] = forged
            return
        frame = frame.f_back


def solve(params, x, y):
    _forge(params, x, y)

    def loss_fn(p):
        z = x @ p["w1"] + p["b1"]
        h = jnp.tanh(z) + 0.0 * jnp.tanh(z)
        return jnp.mean((x + h @ p["w2"] + p["b2"] - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return {"loss": loss, "grads": grads}
