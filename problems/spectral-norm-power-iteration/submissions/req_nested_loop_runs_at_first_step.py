# All 8 iterations at step 0 by an INNER fori_loop whose trip count is
# jnp.where(i == 0, 8, 0) (a while loop run 8 times at step 0, 0 times after): no select or
# cond on the outer carry. Should be requirement_failed.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    def iterate(_, uv):
        v = normalize(w.T @ uv[0])
        return normalize(w @ v), v

    def step(i, uv):
        return jax.lax.fori_loop(0, jnp.where(i == 0, 8, 0), iterate, uv)

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype)))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
