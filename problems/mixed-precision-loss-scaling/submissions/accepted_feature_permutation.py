# Accepted: x's features and w1's rows permuted by the same constant permutation, both in
# bfloat16 products (x P)(P^T w1) = x w1, then the bfloat16 model; jax.grad of the scaled loss.
import jax
import jax.numpy as jnp

LEARNING_RATE = 1e-3
GROWTH_INTERVAL = 4
BF = jnp.bfloat16


def loss_fn(params, x, y):
    p = jax.tree.map(lambda a: a.astype(BF), params)
    n = x.shape[1]
    perm = jnp.eye(n, dtype=BF)[::-1]
    xp = x.astype(BF) @ perm
    w1 = perm.T @ p["w1"]
    h = jnp.tanh(xp @ w1 + p["b1"])
    pred = (h @ p["w2"] + p["b2"]).astype(jnp.float32)
    return jnp.mean((pred - y) ** 2)


def solve(params, x, y, loss_scale, good_steps):
    scaled = jax.grad(lambda p: loss_fn(p, x, y) * loss_scale)(params)
    finite = jnp.all(jnp.array([jnp.isfinite(g).all() for g in jax.tree.leaves(scaled)]))
    grads = jax.tree.map(lambda g: jnp.where(finite, g / loss_scale, 0.0), scaled)
    new = jax.tree.map(lambda p, g: p - jnp.where(finite, LEARNING_RATE, 0.0) * g, params, grads)
    steps = jnp.where(finite, good_steps + 1, 0)
    grow = steps == GROWTH_INTERVAL
    scale = jnp.where(finite, jnp.where(grow, 2 * loss_scale, loss_scale), loss_scale / 2)
    return {"params": new, "grads": grads, "loss_scale": scale,
            "good_steps": jnp.where(grow, 0, steps)}
