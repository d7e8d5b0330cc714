# Accepted: jnp.einsum and jnp.dot lower to the same dot_general as @, so dots_saveable still
# saves x·W1 and the tanh is recomputed.
import jax
import jax.numpy as jnp


def block(params, x):
    pre = jnp.einsum("bd,dh->bh", x, params["w1"]) + params["b1"]
    return x + jnp.dot(jnp.tanh(pre), params["w2"]) + params["b2"]


def solve(params, x, y):
    def loss_fn(params):
        out = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)(params, x)
        return jnp.mean((out - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return {
        "loss": loss,
        "grads": {k: grads[k] for k in ("w1", "b1", "w2", "b2")},
    }
