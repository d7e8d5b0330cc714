# Right numbers, but 7 iterations unrolled in Python before an 8-step fori_loop that runs the
# 8th only at its last step (jnp.where(i == 7, iteration, carry)) and passes (u, v) along
# unchanged at the others: the update runs at one step, not at every step.
import jax
import jax.numpy as jnp

NUM_ITERS = 8


def solve(w, u):
    def normalize(x):
        return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)

    def iterate(uv):
        v = normalize(w.T @ uv[0])
        return normalize(w @ v), v

    uv = (u, jnp.zeros_like(w[0]))
    for _ in range(NUM_ITERS - 1):
        uv = iterate(uv)

    def step(i, uv):
        new = iterate(uv)
        return tuple(jnp.where(i == NUM_ITERS - 1, a, b) for a, b in zip(new, uv))

    u, v = jax.lax.fori_loop(0, NUM_ITERS, step, uv)
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1)}
