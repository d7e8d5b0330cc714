# Accepted: the inputs go through a bfloat16 preprocessing matrix that is the identity
# (jnp.eye(D): a placeholder for a whitening transform), then the bfloat16 model; jax.grad of
# the scaled loss. The product with the identity is a copy of x, and every product of x, w1 and
# w2 still takes bfloat16 operands.
import jax
import jax.numpy as jnp

LEARNING_RATE = 1e-3
GROWTH_INTERVAL = 4
BF = jnp.bfloat16


def loss_fn(params, x, y):
    p = jax.tree.map(lambda a: a.astype(BF), params)
    x16 = x.astype(BF) @ jnp.eye(x.shape[1], dtype=BF)
    h = jnp.tanh(x16 @ p["w1"] + p["b1"])
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
