# Requirement failed: the outside review's attack. No rematerialization at all: the forward tanh
# is computed twice (the copy weighted by zero, so the product x·W1 feeds two tanh ops), and a
# decoy grad(checkpoint(tanh, dots_saveable)) of an unrelated value sits in the differentiated
# loss. The trace does hold a differentiated dots_saveable region around a tanh, but the
# exported program's backward pass reads the forward tanh: the program-level rule fails, and
# the spec-level one, uncorroborated, fails with it.
import jax
import jax.numpy as jnp

decoy = jax.checkpoint(jnp.tanh, policy=jax.checkpoint_policies.dots_saveable)


def loss_fn(params, x, y):
    z = x @ params["w1"] + params["b1"]
    h = jnp.tanh(z) + 0.0 * jnp.tanh(z)
    out = x + h @ params["w2"] + params["b2"]
    return jnp.mean((out - y) ** 2) + 0.0 * jnp.sum(decoy(params["b2"]))


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
