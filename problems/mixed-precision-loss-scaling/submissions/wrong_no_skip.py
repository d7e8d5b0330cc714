# Applies the update even when a gradient is not finite: the weights become inf/NaN.
import jax
import jax.numpy as jnp

LEARNING_RATE = 1e-3
GROWTH_INTERVAL = 4


def loss_fn(params, x, y):
    p = jax.tree.map(lambda a: a.astype(jnp.bfloat16), params)
    h = jnp.tanh(x.astype(jnp.bfloat16) @ p["w1"] + p["b1"])
    pred = h @ p["w2"] + p["b2"]
    return jnp.mean((pred.astype(jnp.float32) - y) ** 2)


def solve(params, x, y, loss_scale, good_steps):
    scaled = jax.grad(lambda p: loss_fn(p, x, y) * loss_scale)(params)
    grads = jax.tree.map(lambda g: g / loss_scale, scaled)
    finite = jnp.all(jnp.array([jnp.isfinite(g).all() for g in jax.tree.leaves(grads)]))
    new_params = jax.tree.map(lambda p, g: p - LEARNING_RATE * g,
                              params, grads)
    grads = jax.tree.map(lambda g: jnp.where(finite, g, 0.0), grads)
    steps = jnp.where(finite, good_steps + 1, 0)
    grow = steps == GROWTH_INTERVAL
    scale = jnp.where(finite, jnp.where(grow, 2.0 * loss_scale, loss_scale), 0.5 * loss_scale)
    return {"params": new_params, "grads": grads, "loss_scale": scale,
            "good_steps": jnp.where(grow, 0, steps)}
