# All 8 iterations at step 0, passed along at steps 1..7; the gate is read through a
# FLOAT constant table indexed by the counter (tbl[i] > 0.5). Should be requirement_failed.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    tbl = jnp.array([1.0, 0, 0, 0, 0, 0, 0, 0], jnp.float32)

    def eight(uv):
        u, v = uv
        for _ in range(8):
            v = normalize(w.T @ u)
            u = normalize(w @ v)
        return u, v

    def step(i, uv):
        new = eight(uv)
        on = tbl[i] > 0.5
        return tuple(jnp.where(on, a, b) for a, b in zip(new, uv))

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype)))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
