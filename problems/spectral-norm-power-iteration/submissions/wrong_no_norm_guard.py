# Normalizes by ||x|| without the EPS guard: 0 / 0 = NaN on the zero vectors (u = 0, w = 0,
# u only on zero rows of w).
import jax
import jax.numpy as jnp


def solve(w, u):
    def step(_, uv):
        v = w.T @ uv[0]
        v = v / jnp.linalg.norm(v)
        u = w @ v
        return u / jnp.linalg.norm(u), v

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros_like(w[0])))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
