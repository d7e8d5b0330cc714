# Honest, unusual (red-team round of 2026-12-06 on reach sizes): the reference's loop (one power
# iteration per step), then w_sn row by row with jax.lax.map (a scan over w's rows: a second
# outermost loop that reads w). The observer changes w at step s of every outermost loop at
# once, so with another loop beside it the steps' reach sizes are not compared.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    def step(_, c):
        v = normalize(w.T @ c[0])
        return normalize(w @ v), v

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros_like(w[0])))
    sigma = u @ (w @ v)
    safe = jnp.where(sigma > 0, sigma, 1.0)
    w_sn = jax.lax.map(lambda row: row / safe, w)
    return {"sigma": sigma, "u": u, "w_sn": w_sn}
