# Honest (red team, 2026-12-07; rejected until then: complex values were never kicked): one
# power iteration per step, the carried u and v complex64 (zero imaginary part);
# the real parts after the loop.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.sqrt(jnp.sum(jnp.abs(x) ** 2)), 1e-12)


def solve(w, u):
    wc = w.astype(jnp.complex64)

    def step(_, c):
        u, _ = c
        v = normalize(wc.T @ u)
        return normalize(wc @ v), v

    u, v = jax.lax.fori_loop(0, 8, step, (u.astype(jnp.complex64),
                                          jnp.zeros(w.shape[1], jnp.complex64)))
    u, v = jnp.real(u), jnp.real(v)
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
