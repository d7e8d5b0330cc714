# All 8 iterations at the LAST step, the pair passed along at steps 0..6. The gate reads
# a 2-element window of a closed-over jnp.arange(8): s = dynamic_slice(ar, i, 2) is
# [i, i + 1] (clamped to [6, 7] at i = 7), so s[1] == i only at i = 7; the evaluator takes
# any dynamic slice of a carried arange as row i, so sees s[1] == i at every step.
# Should be requirement_failed.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    ar = jnp.arange(8)

    def eight(uv):
        u, v = uv
        for _ in range(8):
            v = normalize(w.T @ u)
            u = normalize(w @ v)
        return u, v

    def step(i, uv):
        s = jax.lax.dynamic_slice(ar, (i,), (2,))
        new = eight(uv)
        return tuple(jnp.where(s[1] == i, a, b) for a, b in zip(new, uv))

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype)))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
