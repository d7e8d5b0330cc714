# Honest (red team, 2026-12-07): a while_loop whose int32 counter doubles (1, 2, 4, ..., 128:
# 8 steps until it reaches 256); its trip count is found by running the counter alone.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    def body(s):
        i, u, v = s
        v = normalize(w.T @ u)
        return i * 2, normalize(w @ v), v

    _, u, v = jax.lax.while_loop(lambda s: s[0] < 256, body,
                                 (jnp.int32(1), u, jnp.zeros_like(w[0])))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
