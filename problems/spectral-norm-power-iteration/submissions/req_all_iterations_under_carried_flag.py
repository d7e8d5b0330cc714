# Fails power-iteration-loop: an 8-step fori_loop runs all 8 iterations (Python-
# unrolled) at its first step and passes (u, v) along after; the gate is a boolean flag in the
# carry (False at the start, True after step 0), not the counter.
import jax
import jax.numpy as jnp


def solve(w, u):
    def normalize(x):
        return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)

    def eight(u, v):
        for _ in range(8):
            v = normalize(w.T @ u)
            u = normalize(w @ v)
        return u, v

    def step(i, c):
        u, v, done = c
        nu, nv = eight(u, v)
        return jnp.where(done, u, nu), jnp.where(done, v, nv), jnp.array(True)

    u, v, _ = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros_like(w[0]), jnp.array(False)))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1)}
