# From the red team of 2026-12-07.
# HONEST: the reference's loop, then sigma = u . (w v) with w v computed row by row by
# lax.map, and w_sn row by row by lax.map (each alone is an accepted sample: row-loop sigma and
# lax.map w_sn). At M = 8 both maps are loops of 8 steps after the power loop.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    def step(_, c):
        v = normalize(w.T @ c[0])
        return normalize(w @ v), v

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros_like(w[0])))
    wv = jax.lax.map(lambda row: row @ v, w)
    sigma = u @ wv
    safe = jnp.where(sigma > 0, sigma, 1.0)
    w_sn = jax.lax.map(lambda row: row / safe, w)
    return {"sigma": sigma, "u": u, "w_sn": w_sn}
