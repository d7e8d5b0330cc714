# Cheat (red-team round of 2026-12-06, issue #30): req_two_then_nudge plus w_sn by jax.lax.map
# over the rows of w. The map is a second outermost loop that reads w; with undo variants the
# first two outermost loops get inject and undo variants of their own, so its steps no longer
# move with the power loop's and the nudges at steps 5-7 show (3e-8 against 0.02).
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
    safe = jnp.where(sigma > 0, sigma, 1.0)
    w_sn = jax.lax.map(lambda row: row / safe, w)
    return {"sigma": sigma, "u": u, "w_sn": w_sn}
