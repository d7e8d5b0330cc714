# Honest (red team, 2026-12-07; rejected while kicked runs took their twin's roundings and
# max/abs choices): the reference iteration, with u snapped to 7 decimals after each
# normalisation (jnp.round(u, 7), e.g. for reproducible output across backends); v likewise is
# left alone.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    def step(_, c):
        u, _ = c
        v = normalize(w.T @ u)
        return jnp.round(normalize(w @ v), 7), v

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype)))
    u = normalize(u)
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
