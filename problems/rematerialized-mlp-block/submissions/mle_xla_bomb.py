# Memory limit exceeded: a (2**16, 2**16) float32 array (16 GiB) inside the compiled program.
# A bare jnp.ones(...).sum() * 0 would be constant-folded away by XLA, so the array is made to
# depend on x and is consumed by a matrix-vector product, which needs it materialized: the
# compiled program asks for ~17 GB of temporary memory before it computes anything.
import jax
import jax.numpy as jnp

N = 1 << 16


def block(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return x + h @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    out = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)(params, x)
    return jnp.mean((out - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    big = jnp.ones((N, N), dtype=jnp.float32) * x[0, 0]
    waste = big @ jnp.ones((N,), dtype=jnp.float32)
    return {"loss": loss + 0.0 * jnp.sum(waste), "grads": grads}
