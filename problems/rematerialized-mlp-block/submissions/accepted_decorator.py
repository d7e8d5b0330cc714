# Accepted: jax.checkpoint used as a decorator (through functools.partial to pass the policy).
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.checkpoint, policy=jax.checkpoint_policies.dots_saveable)
def residual_mlp(w1, b1, w2, b2, x):
    return x + jnp.tanh(x @ w1 + b1) @ w2 + b2


def objective(params, x, y):
    out = residual_mlp(params["w1"], params["b1"], params["w2"], params["b2"], x)
    return jnp.mean((out - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(objective)(params, x, y)
    return {"loss": loss, "grads": grads}
