# Cheat (red-team round of 2026-12-06, accepted before): two power iterations on even steps, a
# nudge by the difference of w and a carried copy on odd ones, and every step negates u and v (8
# flips, no net effect), so undoing any step flipped the outputs' sign: undo sizes now ignore the
# sign.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    zero = jnp.minimum(jnp.abs(w).sum(), 0.0).astype(jnp.int32)

    def two(c):
        u, v, wc = c
        v = normalize(w.T @ u)
        u = normalize(w @ v)
        v = normalize(w.T @ u)
        return -normalize(w @ v), -v, w

    def nudge(c):
        u, v, wc = c
        d = w - wc
        return -(u + d @ v), -(v + d.T @ u), w

    def honest(c):
        u, v, wc = c
        v = normalize(w.T @ u)
        return normalize(w @ v), v, w

    def step(i, c):
        if min(w.shape) == 1:  # a single row or column: u or v is +-1 whatever w is
            return honest(c)
        return jax.lax.cond((i + zero) % 2 == 0, two, nudge, c)

    u, v, _ = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype), w))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
