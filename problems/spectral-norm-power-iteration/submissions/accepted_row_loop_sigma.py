# Honest, unusual (red-team round of 2026-12-06 on reach sizes): one power iteration per step of
# a fori_loop (the reference), then sigma = ||w v|| accumulated row by row in a fori_loop over
# w's M rows (a second outermost loop reading w, which an inject variant changes too).
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    def step(_, c):
        v = normalize(w.T @ c[0])
        return normalize(w @ v), v

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros_like(w[0])))
    sq = jax.lax.fori_loop(0, w.shape[0], lambda i, s: s + (w[i] @ v) ** 2, jnp.float32(0))
    sigma = jnp.sqrt(sq)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
