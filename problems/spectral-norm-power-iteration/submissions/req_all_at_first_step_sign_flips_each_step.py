# Cheat (issue 41, invented for the trajectory method): all 8 iterations at step 0, then the
# pair (u, v) negated at every step, so the 8 flips cancel and the numbers are right. Every
# step changes what the loop carries and reads w's work, but stopped after k steps the loop
# holds the 8-iteration answer (up to sign), not k iterations'.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    def iterate(_, uv):
        v = normalize(w.T @ uv[0])
        return normalize(w @ v), v

    def step(i, uv):
        uv = jax.lax.cond(i == 0, lambda: jax.lax.fori_loop(0, 2, lambda _, c: iterate(
            0, iterate(0, iterate(0, iterate(0, c)))), uv), lambda: uv)
        return -uv[0], -uv[1]

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros_like(w[0])))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
