# Cheat (red-team round of 2026-12-06, accepted before): inside a dots_saveable checkpoint, the
# tanh goes through a product with a reversal permutation P (and W2's rows are reversed to match,
# so (h P)(P^T W2) = h W2). h P is a dot, so dots_saveable SAVES it: the W2 gradient reads the
# stored forward tanh (permuted), and the tanh is recomputed only for its own derivative.
import jax
import jax.numpy as jnp


def block(p, x):
    h = jnp.tanh(x @ p["w1"] + p["b1"])
    H = h.shape[-1]
    P = jnp.eye(H, dtype=h.dtype)[::-1]
    hs = h @ P
    return x + hs @ p["w2"][::-1] + p["b2"]


ckpt = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)


def loss_fn(p, x, y):
    return jnp.mean((ckpt(p, x) - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
