# Compile error: a missing colon after the def line (this file must stay invalid Python).
import jax
import jax.numpy as jnp


def solve(params, x, y)
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    out = x + h @ params["w2"] + params["b2"]
    return {"loss": jnp.mean((out - y) ** 2), "grads": jax.grad(lambda p: 0.0)(params)}
