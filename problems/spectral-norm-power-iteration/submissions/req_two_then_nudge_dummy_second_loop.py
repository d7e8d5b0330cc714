# Cheat (red-team round of 2026-12-06, accepted before): req_two_then_nudge plus a second 2-step
# loop that multiplies sigma by 1. Another outermost loop switched the reach and undo comparisons
# off; one the variants change nothing in no longer does.
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
        return (normalize(u + 1e-6 * normalize(w @ v)),
                normalize(v + 1e-6 * normalize(w.T @ u)) * (jnp.linalg.norm(v) > 0))

    def step(i, c):
        return jax.lax.cond(i + zero < 4, two, nudge, c)

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype)))
    sigma = u @ (w @ v)
    # a second outermost loop that does nothing at all (2 steps, multiplies sigma by 1)
    sigma = jax.lax.fori_loop(0, 2, lambda i, s: s * 1.0, sigma)
    w_sn = w / jnp.where(sigma > 0, sigma, 1.0)
    return {"sigma": sigma, "u": u, "w_sn": w_sn}
