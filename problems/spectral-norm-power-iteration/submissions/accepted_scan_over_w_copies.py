# Honest (red-team round of 2026-12-06): a scan whose xs are 8 copies of w, carrying (u, v).
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    def step(c, wk):
        u, v = c
        v = normalize(wk.T @ u)
        return (normalize(wk @ v), v), None

    (u, v), _ = jax.lax.scan(step, (u, jnp.zeros(w.shape[1], w.dtype)),
                             jnp.broadcast_to(w, (8, *w.shape)))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
