# Right numbers, but only half of the work in the loop: its 8 steps update u and v at once
# from each other's previous values (u from w v, v from w^T u), so u holds a real iterate only
# every other step: 4 power iterations. The other 4 are Python-unrolled after the loop, from
# what it returns: 9 successive products with w follow it (outside_loop_products = 5).
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    def step(_, uv):
        u, v = uv
        return normalize(w @ v), normalize(w.T @ u)

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros_like(w[0])))
    for _ in range(4):
        v = normalize(w.T @ u)
        u = normalize(w @ v)
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
