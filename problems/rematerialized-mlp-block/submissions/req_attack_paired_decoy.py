# Requirement failed: no rematerialization, plus a hand-made "recomputed" tanh of the very same
# x·W1 product that meets a forward value (the loss) and reaches the gradients times zero: it
# looks like the second tanh of a rematerialization. The exported program's backward pass still
# reads the forward tanh, which no rematerialized program does.
import jax
import jax.numpy as jnp


def solve(params, x, y):
    z = x @ params["w1"] + params["b1"]

    def loss_fn(p):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        return jnp.mean((x + h @ p["w2"] + p["b2"] - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    fake = jnp.tanh(z) * (0.0 * loss)
    grads = dict(grads, b1=grads["b1"] + jnp.sum(fake, axis=0))
    return {"loss": loss, "grads": grads}
