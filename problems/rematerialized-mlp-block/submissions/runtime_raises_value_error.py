# Runtime error: solve raises while it is being traced (a learner's shape assertion gone wrong).
import jax
import jax.numpy as jnp


def solve(params, x, y):
    if x.shape[1] != params["w1"].shape[1]:
        raise ValueError(f"x has {x.shape[1]} features but w1 expects {params['w1'].shape[1]}")
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    out = x + h @ params["w2"] + params["b2"]
    loss = jnp.mean((out - y) ** 2)
    return {"loss": loss, "grads": jax.tree.map(jnp.zeros_like, params)}
