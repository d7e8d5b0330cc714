# Cheat (red-team round 2 of 2026-12-06, issue #30): 99.9% of W2's gradient reads the forward
# tanh saved through a permuted dot, and a 1e-3 term of the recomputed tanh moves W2's gradient
# too. Changing the recomputed tanh moves W2's gradient by 2e-4 of its size; an honest one
# moves it by 0.06 to 1.
import jax
import jax.numpy as jnp

E = 1e-3


def block(p, x):
    h = jnp.tanh(x @ p["w1"] + p["b1"])
    H = h.shape[-1]
    P = jnp.eye(H, dtype=h.dtype)[::-1]
    hs = h @ P
    return x + ((1.0 - E) * hs) @ p["w2"][::-1] + (E * h) @ p["w2"] + p["b2"]


ckpt = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)


def loss_fn(p, x, y):
    return jnp.mean((ckpt(p, x) - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
