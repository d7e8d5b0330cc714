# Honest (red-team round 5 of 2026-12-06, issue #30): a dots_saveable checkpoint around an inner
# everything_saveable one of the same block: the exported program recomputes the tanh from the
# saved product (the outer policy decides what the backward pass keeps).
import jax
import jax.numpy as jnp
cp = jax.checkpoint_policies


def _block(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return x + h @ params["w2"] + params["b2"]


_inner = jax.checkpoint(_block, policy=cp.everything_saveable)
_outer = jax.checkpoint(lambda p, x: _inner(p, x), policy=cp.dots_saveable)


def _loss(params, x, y):
    return jnp.mean((_outer(params, x) - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(_loss)(params, x, y)
    return {"loss": loss, "grads": grads}
