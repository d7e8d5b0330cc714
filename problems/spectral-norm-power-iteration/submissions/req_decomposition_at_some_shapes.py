# Cheat (issue 41): the honest 8 power iterations when w is square (the first test's shape is
# 2 x 2), an SVD's exact sigma at every other shape. The traced program of every signature is
# checked, not the first one's alone.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    def step(_, uv):
        v = normalize(w.T @ uv[0])
        return normalize(w @ v), v

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros_like(w[0])))
    if w.shape[0] == w.shape[1]:
        sigma = u @ (w @ v)
    else:
        sigma = jnp.linalg.svd(w, compute_uv=False)[0]
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
