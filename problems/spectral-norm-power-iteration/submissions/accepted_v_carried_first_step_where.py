# From the red team of 2026-12-07.
# HONEST: the loop carries only v: step 0 takes v = normalize(w^T u0), later steps
# v = normalize(w^T normalize(w v)); u = normalize(w v) and sigma = ||w v|| after the loop.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u0):
    def step(i, v):
        u = jnp.where(i == 0, u0, normalize(w @ v))
        return normalize(w.T @ u)

    v = jax.lax.fori_loop(0, 8, step, jnp.zeros(w.shape[1], w.dtype))
    wv = w @ v
    u = normalize(wv)
    sigma = u @ wv
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
