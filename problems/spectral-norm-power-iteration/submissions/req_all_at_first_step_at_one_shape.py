# CHEAT: honest fori_loop, except at shape (3, 3) (whose first test, the identity, shows no step):
# there all 8 iterations run unrolled at step 0 and steps 1..7 idle. Caught: every test is
# followed.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    def one(uv):
        v = normalize(w.T @ uv[0])
        return normalize(w @ v), v

    def eight(uv):
        for _ in range(8):
            uv = one(uv)
        return uv

    cheat = w.shape == (3, 3)

    def step(i, uv):
        if cheat:
            new = eight(uv)
            return tuple(jnp.where(i == 0, a, b) for a, b in zip(new, uv))
        return one(uv)

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype)))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
