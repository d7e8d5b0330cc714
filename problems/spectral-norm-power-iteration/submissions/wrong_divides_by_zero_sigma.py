# Guards the normalizations but divides w by sigma unguarded: w / 0 is NaN or inf when
# sigma = 0 (u = 0, w = 0, w^T u = 0).
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    def step(_, uv):
        v = normalize(w.T @ uv[0])
        return normalize(w @ v), v

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros_like(w[0])))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / sigma}
