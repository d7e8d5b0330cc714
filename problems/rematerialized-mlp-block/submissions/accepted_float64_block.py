# Accepted: the block computed in float64 (x64 switched on at import), outputs cast back to the
# float32 the statement asks for.
import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)


def block(params, x):
    x64 = x.astype(jnp.float64)
    h = jnp.tanh(x64 @ params["w1"].astype(jnp.float64) + params["b1"])
    return x64 + h @ params["w2"].astype(jnp.float64) + params["b2"]


def loss_fn(params, x, y):
    out = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)(params, x)
    return jnp.mean((out - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    grads = jax.tree_util.tree_map(lambda g: g.astype(jnp.float32), grads)
    return {"loss": loss.astype(jnp.float32), "grads": grads}
