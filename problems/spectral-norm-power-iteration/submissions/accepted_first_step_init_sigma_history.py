# Honest (red-team round of 2026-12-06): the start vector normalised at the first step (jnp.where
# on i == 0), then the iteration; sigma estimates written into a history array.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    def step(i, c):
        u, v, hist = c
        u = jnp.where(i == 0, normalize(u), u)
        v = normalize(w.T @ u)
        wv = w @ v
        u = normalize(wv)
        hist = hist.at[i].set(u @ wv)
        return u, v, hist

    u, v, hist = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype),
                                                jnp.zeros(8, w.dtype)))
    sigma = hist[7]
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
