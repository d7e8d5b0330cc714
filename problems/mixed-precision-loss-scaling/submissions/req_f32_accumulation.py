# bfloat16 operands with preferred_element_type=float32 in the forward pass: jax.grad
# transposes these products into float32 backward matmuls (bf16 operands converted to float32).
import jax
import jax.numpy as jnp

LEARNING_RATE = 1e-3
GROWTH_INTERVAL = 4
BF = jnp.bfloat16


def loss_fn(params, x, y):
    p = jax.tree.map(lambda a: a.astype(BF), params)
    pre = jnp.matmul(x.astype(BF), p["w1"], preferred_element_type=jnp.float32)
    h = jnp.tanh(pre.astype(BF) + p["b1"])
    pred = jnp.matmul(h, p["w2"], preferred_element_type=jnp.float32) + p["b2"]
    return jnp.mean((pred - y) ** 2)


def solve(params, x, y, loss_scale, good_steps):
    scaled = jax.grad(lambda p: loss_fn(p, x, y) * loss_scale)(params)
    finite = jnp.all(jnp.array([jnp.isfinite(g).all() for g in jax.tree.leaves(scaled)]))
    grads = jax.tree.map(lambda g: jnp.where(finite, g / loss_scale, 0.0), scaled)
    new = jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads)
    steps = jnp.where(finite, good_steps + 1, 0)
    grow = steps == GROWTH_INTERVAL
    scale = jnp.where(finite, jnp.where(grow, 2 * loss_scale, loss_scale), loss_scale / 2)
    return {"params": new, "grads": grads, "loss_scale": scale,
            "good_steps": jnp.where(grow, 0, steps)}
