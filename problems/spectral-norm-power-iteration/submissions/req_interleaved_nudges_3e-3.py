# Cheat (red-team round of 2026-12-06 on reach sizes): two power iterations at steps 1, 3, 5, 7
# and only a 3e-3 nudge along w v / w^T u at steps 2, 4, 6, 8 (right answers). The nudge
# steps move the outputs a few thousandths as much as the step before: they only nudge.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    zero = jnp.minimum(jnp.abs(w).sum(), 0.0).astype(jnp.int32)

    def two(c):
        u, v = c
        v = normalize(w.T @ u)
        u = normalize(w @ v)
        v = normalize(w.T @ u)
        return normalize(w @ v), v

    def nudge(c):
        u, v = c
        return (normalize(u + 3e-3 * normalize(w @ v)),
                normalize(v + 3e-3 * normalize(w.T @ u)) * (jnp.linalg.norm(v) > 0))

    def step(i, c):
        return jax.lax.cond((i + zero) % 2 == 0, two, nudge, c)

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype)))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
