# Right numbers, but a Python loop: unrolled into 8 copies of the step, no loop in the program.
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    v = jnp.zeros_like(w[0])
    for _ in range(8):
        v = normalize(w.T @ u)
        u = normalize(w @ v)
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
