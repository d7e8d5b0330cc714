# Wrong answer: casts the gradients to bfloat16 "to save memory". The contract is float32
# everywhere, so the grader reports the dtype it got (bfloat16, a dtype numpy alone does not
# know) instead of comparing the numbers.
import jax
import jax.numpy as jnp


def block(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return x + h @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    out = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)(params, x)
    return jnp.mean((out - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": {k: g.astype(jnp.bfloat16) for k, g in grads.items()}}
