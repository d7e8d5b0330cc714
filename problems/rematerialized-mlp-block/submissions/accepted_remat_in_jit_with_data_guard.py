# Accepted (issue #30, honest but unusual): jax.remat with the checkpoint_dots alias and
# prevent_cse=False, inside a jitted loss whose value passes a data guard (jnp.where on
# isfinite: a select whose predicate is data, so the checkpoint stays live).
import functools

import jax
import jax.numpy as jnp


@functools.partial(jax.remat, policy=jax.checkpoint_policies.checkpoint_dots, prevent_cse=False)
def block(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return x + h @ params["w2"] + params["b2"]


@jax.jit
def loss_fn(params, x, y):
    loss = jnp.mean((block(params, x) - y) ** 2)
    return jnp.where(jnp.isfinite(loss), loss, 0.0)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
