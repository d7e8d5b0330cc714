# Cheat (red-team round of 2026-12-06 on reach sizes): req_two_then_nudge.py with a 3e-3 nudge
# (the largest that stays within the tolerance: 1e-2 is a wrong answer). Steps 5-7 move the
# outputs ~1e-4 against 0.02 at step 4, a ratio of ~5e-3: under the bound of 1/100 (a bound
# of 1/1000 let it pass).
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
        return (normalize(u + 3e-3 * normalize(w @ v)),
                normalize(v + 3e-3 * normalize(w.T @ u)) * (jnp.linalg.norm(v) > 0))

    def step(i, c):
        return jax.lax.cond(i + zero < 4, two, nudge, c)

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype)))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
