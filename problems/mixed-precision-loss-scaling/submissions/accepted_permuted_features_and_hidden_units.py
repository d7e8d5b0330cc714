# Accepted: x's features permuted (x P) and w1's rows with them (P^T w1), the hidden units
# permuted too (w1 Q, b1 Q, Q^T w2), every product in bfloat16: the model is unchanged, and no
# product reads x, w1 or w2 as given, only their constant rearrangements; jax.grad of the
# scaled loss.
import jax
import jax.numpy as jnp

LEARNING_RATE = 1e-3
GROWTH_INTERVAL = 4
BF = jnp.bfloat16


def loss_fn(params, x, y):
    p = jax.tree.map(lambda a: a.astype(BF), params)
    P = jnp.eye(x.shape[1], dtype=BF)[::-1]
    Q = jnp.roll(jnp.eye(p["w1"].shape[1], dtype=BF), 1, axis=0)
    w1 = P.T @ p["w1"] @ Q
    b1 = p["b1"] @ Q
    w2 = Q.T @ p["w2"]
    h = jnp.tanh((x.astype(BF) @ P) @ w1 + b1)
    pred = (h @ w2 + p["b2"]).astype(jnp.float32)
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
