# Honest (red-team round 6 of 2026-12-06, issue #30): the whole block, tanh included, in jax.checkpoint(dots_saveable) inside value_and_grad;
# the hidden layer is computed one hidden unit at a time by a lax.scan over W1's columns (and
# W2's rows), each unit's contribution added through a (B,1) @ (1,D) product. The tanh is
# recomputed in the backward pass from the saved x @ W1[:, j] products.
import jax
import jax.numpy as jnp


def block(p, x):
    def unit(acc, col):
        w1j, b1j, w2j = col
        hj = jnp.tanh(x @ w1j + b1j)                 # (B,)
        return acc + hj[:, None] @ w2j[None, :], None

    out, _ = jax.lax.scan(unit, x + p["b2"], (p["w1"].T, p["b1"], p["w2"]))
    return out


ckpt = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)


def loss_fn(p, x, y):
    return jnp.mean((ckpt(p, x) - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
