# Cheat (execution evidence): two power iterations on even steps and a nudge that reads no w
# on odd ones, chosen by a parity computed with a data zero so the text analysis cannot run
# it: four of the eight steps do no work on w.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    zero = jnp.minimum(jnp.abs(w).sum(), 0.0).astype(jnp.int32)

    def two(c):
        u, v = c
        v = normalize(w.T @ u)
        u = normalize(w @ v)
        v = normalize(w.T @ u)
        return normalize(w @ v), v

    def nudge(c):
        u, v = c
        return normalize(u * 1.0), v

    def step(i, c):
        return jax.lax.cond((i + zero) % 2 == 0, two, nudge, c)

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype)))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
