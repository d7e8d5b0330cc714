# Honest (red team, 2026-12-07): a while_loop with a float32 step counter (t < 8.0, t += 1.0);
# its trip count is found by running the counter alone, rounded as float32 rounds it.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    def cond(s):
        return s[0] < 8.0

    def body(s):
        t, u, v = s
        v = normalize(w.T @ u)
        return t + 1.0, normalize(w @ v), v

    _, u, v = jax.lax.while_loop(cond, body, (jnp.float32(0.0), u, jnp.zeros_like(w[0])))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
