# HONEST: one iteration per scan step; the scan records every iterate and the answer is read
# from the history (us[-1], vs[-1]) instead of from the final carry.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    def step(u, _):
        v = normalize(w.T @ u)
        u = normalize(w @ v)
        return u, (u, v)

    _, (us, vs) = jax.lax.scan(step, u, None, length=8)
    u, v = us[-1], vs[-1]
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
