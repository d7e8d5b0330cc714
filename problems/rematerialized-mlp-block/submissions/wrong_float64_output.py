# Wrong answer: turns on 64-bit mode "for accuracy" and returns float64 arrays; the contract is
# float32 everywhere.
import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)


def block(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return x + h @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    params = {k: v.astype(jnp.float64) for k, v in params.items()}
    out = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)(
        params, x.astype(jnp.float64)
    )
    return jnp.mean((out - y.astype(jnp.float64)) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": {k: g.astype(jnp.float64) for k, g in grads.items()}}
