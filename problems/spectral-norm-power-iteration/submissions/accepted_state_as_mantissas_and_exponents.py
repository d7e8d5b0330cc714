# Honest (red team, 2026-12-07; rejected while kicked runs took their twin's roundings and
# max/abs choices): one power iteration per step; u is carried split into mantissas and
# exponents (jnp.frexp, elementwise), rebuilt with jnp.ldexp at the start of each step.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    def step(_, c):
        m, e, _ = c
        v = normalize(w.T @ jnp.ldexp(m, e))
        m2, e2 = jnp.frexp(normalize(w @ v))
        return m2, e2, v

    m0, e0 = jnp.frexp(u)
    m, e, v = jax.lax.fori_loop(0, 8, step, (m0, e0, jnp.zeros(w.shape[1], w.dtype)))
    u = jnp.ldexp(m, e)
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
