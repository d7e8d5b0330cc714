# Cheat (2026-12-07, written against the trajectory check): the 8 iterations unrolled in
# Python, then an 8-step loop carrying (u, v) beside a counter that reaches them by 1e-30. The
# loop holds the answer from its start (not counted as done early); the loop's carry check
# fails it (no value it carries is computed at each step from its previous value).
import jax
import jax.numpy as jnp


def _normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    # all 8 iterations unrolled in Python, then a loop of 8 steps that only counts
    v = jnp.zeros_like(w[0])
    for _ in range(8):
        v = _normalize(w.T @ u)
        u = _normalize(w @ v)

    def step(i, c):
        u, v, k = c
        k = k * 1.0001 + 1.0
        return u + 1e-30 * k, v + 1e-30 * k, k

    u, v, _ = jax.lax.fori_loop(0, 8, step, (u, v, jnp.zeros((), w.dtype)))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1)}
