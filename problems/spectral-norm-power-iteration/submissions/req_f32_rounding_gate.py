# A carried float32 c = 1.0, c + 1e-8 each step: in float32 it never moves (1e-8 is below
# half an ulp of 1.0), but the step-by-step evaluator adds in float64 and sees c > 1.0 from
# step 1 on. The gate (i == 0) | (c > 1.0) is really i == 0: all 8 iterations at step 0, the
# pair passed along at steps 1..7. Should be requirement_failed.
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
        on = (i == 0) | (f > 1.0)
        u, v = (jnp.where(on, a, b) for a, b in zip(new, (u, v)))
        return u, v, f + jnp.float32(1e-8)

    u, v, _ = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype),
                                             jnp.float32(1.0)))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
