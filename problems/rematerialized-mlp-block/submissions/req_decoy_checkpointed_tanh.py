# Requirement failed (program level): a decoy. The real block is not checkpointed; an unrelated
# tanh(b1) is, with the right policy, inside the differentiated loss (multiplied by 0 so the
# numbers stay right). The jaxpr does hold a differentiated dots_saveable region containing a
# tanh, so the spec-level check is satisfied, but the exported program never recomputes the
# block's tanh from the saved x·W1 product.
import jax
import jax.numpy as jnp

decoy = jax.checkpoint(jnp.tanh, policy=jax.checkpoint_policies.dots_saveable)


def loss_fn(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    out = x + h @ params["w2"] + params["b2"]
    return jnp.mean((out - y) ** 2) + 0.0 * jnp.sum(decoy(params["b1"]))


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
