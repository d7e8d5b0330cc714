# Decoy: the honest 8-step loop, plus 0 x an SVD's sigma, so that the loop requirement would
# see its loop. The decomposition is still in the traced program (and in the exported one).
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    def step(_, uv):
        v = normalize(w.T @ uv[0])
        return normalize(w @ v), v

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros_like(w[0])))
    sigma = u @ (w @ v) + 0.0 * jnp.linalg.svd(w, compute_uv=False)[0]
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
