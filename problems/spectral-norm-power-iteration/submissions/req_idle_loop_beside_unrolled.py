# Decoy: a fori_loop of exactly 8 steps that only counts (its result enters the output as
# x 8 / 8), beside the power iteration unrolled in Python. The 8-step loop must carry u.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    count = jax.lax.fori_loop(0, 8, lambda i, c: c + 1.0, jnp.float32(0.0))
    v = jnp.zeros_like(w[0])
    for _ in range(8):
        v = normalize(w.T @ u)
        u = normalize(w @ v)
    sigma = u @ (w @ v) * (count / 8.0)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
