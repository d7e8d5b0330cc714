# Cheat: the tanh is saved by dots_saveable through a product with an identity built from the
# data, and the block's output reads 99% of it and 1% of the recomputed tanh (mixed before
# the product with W2): W2's gradient moves with the recomputed tanh only by its 1% share.
import jax
import jax.numpy as jnp

E = 1e-2


def block(p, x):
    h = jnp.tanh(x @ p["w1"] + p["b1"])
    H = h.shape[-1]
    I = jnp.eye(H, dtype=h.dtype) * (1.0 + 0.0 * jnp.abs(x).max())  # an identity from data
    hs = h @ I
    mixed = (1.0 - E) * hs + E * h
    return x + mixed @ p["w2"] + p["b2"]


ckpt = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)


def loss_fn(p, x, y):
    return jnp.mean((ckpt(p, x) - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
