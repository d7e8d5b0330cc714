# Honest (issue 41): power iteration on the Gram matrix H = w w^T, built inside the loop at
# step 0 (lax.cond on the counter; a zero matrix before that), then one iteration u <- n(H u)
# per step; v = n(w^T u_7) and sigma = u_8 . (w v) after the loop.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    def step(i, c):
        H, _, u = c
        H = jax.lax.cond(i == 0, lambda: w @ w.T, lambda: H)
        return H, u, normalize(H @ u)

    H0 = jnp.zeros((w.shape[0], w.shape[0]), w.dtype)
    _, u_prev, u = jax.lax.fori_loop(0, 8, step, (H0, u, u))
    v = normalize(w.T @ u_prev)
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
