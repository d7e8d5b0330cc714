# Cheat (issue 41, invented for the trajectory method): the 8 iterations unrolled before the
# loop, then 8 steps that each add a w-dependent nudge to u and take it back at the next step
# (a checksum the steps keep alive: every step reads w and changes the carry). The nudges
# cancel, the numbers are right; stopped after k steps the loop holds the finished u.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    v = jnp.zeros_like(w[0])
    for _ in range(8):
        v = normalize(w.T @ u)
        u = normalize(w @ v)

    def step(i, c):
        u, v = c
        nudge = 1e-7 * (w @ v)
        return jnp.where(i % 2 == 0, u + nudge, u - nudge), v

    u, v = jax.lax.fori_loop(0, 8, step, (u, v))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
