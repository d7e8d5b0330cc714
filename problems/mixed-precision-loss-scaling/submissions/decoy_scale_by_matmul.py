# Decoy for loss-scaled-backward: the unscaled gradients go through a bfloat16 matmul with the
# scale (a diagonal matrix) after jax.grad, so a matmul does read the scale; the backward pass
# itself still ran unscaled.
import jax
import jax.numpy as jnp

LEARNING_RATE = 1e-3
GROWTH_INTERVAL = 4
BF = jnp.bfloat16


def loss_fn(params, x, y):
    p = jax.tree.map(lambda a: a.astype(BF), params)
    h = jnp.tanh(x.astype(BF) @ p["w1"] + p["b1"])
    return jnp.mean(((h @ p["w2"] + p["b2"]).astype(jnp.float32) - y) ** 2)


def solve(params, x, y, loss_scale, good_steps):
    plain = jax.grad(loss_fn)(params, x, y)
    n = plain["w1"].shape[1]
    eye = jnp.eye(n, dtype=jnp.float32) * loss_scale
    scaled = {k: g * loss_scale for k, g in plain.items()}
    scaled["w1"] = jnp.matmul(plain["w1"], eye)
    finite = jnp.all(jnp.array([jnp.isfinite(g).all() for g in jax.tree.leaves(scaled)]))
    grads = jax.tree.map(lambda g: jnp.where(finite, g / loss_scale, 0.0), scaled)
    new = jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads)
    steps = jnp.where(finite, good_steps + 1, 0)
    grow = steps == GROWTH_INTERVAL
    scale = jnp.where(finite, jnp.where(grow, 2 * loss_scale, loss_scale), loss_scale / 2)
    return {"params": new, "grads": grads, "loss_scale": scale,
            "good_steps": jnp.where(grow, 0, steps)}
