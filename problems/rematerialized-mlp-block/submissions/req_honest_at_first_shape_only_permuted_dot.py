# Cheat (red-team round 2 of 2026-12-06, accepted before): honest at the first example's shape
# (B, D, H) = (1, 2, 3), the tanh saved through a permuted dot at every other shape. The tanh
# observer ran on the first test only; it now also runs on a test of another program, which a
# hash of the programs picks.
import jax
import jax.numpy as jnp


def honest(p, x):
    return x + jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


def permuted(p, x):
    h = jnp.tanh(x @ p["w1"] + p["b1"])
    P = jnp.eye(h.shape[-1], dtype=h.dtype)[::-1]
    return x + (h @ P) @ p["w2"][::-1] + p["b2"]


def solve(params, x, y):
    shape = (x.shape[0], x.shape[1], params["w1"].shape[1])
    block = honest if shape == (1, 2, 3) else permuted
    ckpt = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)

    def loss_fn(p):
        return jnp.mean((ckpt(p, x) - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return {"loss": loss, "grads": grads}
