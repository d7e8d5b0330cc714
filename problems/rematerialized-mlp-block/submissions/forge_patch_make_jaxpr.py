# Forging attempt: replaces jax.make_jaxpr so that tracing solve shows a properly checkpointed
# reference, while solve itself computes without any checkpoint. The grader keeps its own
# reference to make_jaxpr taken before importing the file, and the program-level check looks at
# the exported program anyway, so both requirements fail.
import jax
import jax.numpy as jnp

_real_make_jaxpr = jax.make_jaxpr


def _block(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return x + h @ params["w2"] + params["b2"]


def _honest_looking(params, x, y):
    def loss_fn(p):
        out = jax.checkpoint(_block, policy=jax.checkpoint_policies.dots_saveable)(p, x)
        return jnp.mean((out - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return {"loss": loss, "grads": grads}


def _fake_make_jaxpr(fun, *args, **kwargs):
    return _real_make_jaxpr(_honest_looking, *args, **kwargs)


jax.make_jaxpr = _fake_make_jaxpr


def solve(params, x, y):
    def loss_fn(p):
        return jnp.mean((_block(p, x) - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return {"loss": loss, "grads": grads}
