# A carried float c = 1e20, c * 1e20 each step: finite at step 0, inf from step 1 on.
# The gate c * 0.0 == 0.0 is really "step 0" (0 * inf is NaN), but folding reads 0 * c as 0
# at every step. All 8 iterations at step 0, the pair passed along after.
# Should be requirement_failed.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    def eight(uv):
        u, v = uv
        for _ in range(8):
            v = normalize(w.T @ u)
            u = normalize(w @ v)
        return u, v

    def step(i, c):
        u, v, f = c
        new = eight((u, v))
        on = f * jnp.float32(0.0) == 0.0
        u, v = (jnp.where(on, a, b) for a, b in zip(new, (u, v)))
        return u, v, f * jnp.float32(1e20)

    u, v, _ = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype),
                                             jnp.float32(1e20)))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
