# Accepted: one small jitted helper nested a thousand times around the loss. `twice(f)` is a
# jitted f(f(v)); applying it nine times to an identity-like jitted `keep` makes a tree of 1,023
# nested jit calls (512 of them call `keep`), and the backward pass has as many. The traced
# program refers to each of its few distinct sub-programs hundreds of times: its summary must
# hold each once (copied at every reference it would be ~390 KB, over the sandbox's 256 KB file
# cap), and the grade must be the real one. The exported program stays small too: jax lowers
# each distinct function once and calls it.
import jax
import jax.numpy as jnp

LEVELS = 9


@jax.jit
def keep(v):
    """Identity-like: one multiply by one, so it is a real nested program, not forwarded."""
    return v * 1.0


def twice(f):
    return jax.jit(lambda v: f(f(v)))


nested = keep
for _ in range(LEVELS):
    nested = twice(nested)


def block(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return x + h @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    out = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)(params, x)
    return nested(jnp.mean((out - y) ** 2))


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
