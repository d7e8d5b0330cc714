# Cheat (red-team round of 2026-12-06, accepted before): the tanh through a product with an
# identity whose diagonal of ones comes from data, written without jnp.diag: ones[:, None] *
# eye(H). h @ E is a dot, so dots_saveable saves the forward tanh.
import jax
import jax.numpy as jnp


def block(p, x):
    h = jnp.tanh(x @ p["w1"] + p["b1"])
    ones = jnp.sign(jnp.abs(p["b1"]) + 1.0)
    E = ones[:, None] * jnp.eye(h.shape[-1], dtype=h.dtype)
    hs = h @ E
    return x + hs @ p["w2"] + p["b2"]


ckpt = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)


def loss_fn(p, x, y):
    return jnp.mean((ckpt(p, x) - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
