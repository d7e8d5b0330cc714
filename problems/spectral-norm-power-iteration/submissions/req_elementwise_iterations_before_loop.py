# Cheat (execution evidence): the eight power iterations unrolled before
# the loop with every product and norm spelled element by element (no dot, no reduction), and
# the required loop run beside them; the outputs average the two (equal numbers).
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def _norm_by_hand(x):
    total = x[0] * x[0]
    for i in range(1, x.shape[0]):
        total = total + x[i] * x[i]
    return x / jnp.maximum(jnp.sqrt(total), 1e-12)


def solve(w, u):
    m, n = w.shape
    u0 = u
    for _ in range(8):
        v = w[0] * u[0]
        for i in range(1, m):
            v = v + w[i] * u[i]
        v = _norm_by_hand(v)
        u = w[:, 0] * v[0]
        for j in range(1, n):
            u = u + w[:, j] * v[j]
        u = _norm_by_hand(u)

    def step(_, c):
        u, v = c
        v = normalize(w.T @ u)
        return normalize(w @ v), v

    u_loop, v_loop = jax.lax.fori_loop(0, 8, step, (u0, jnp.zeros(n, w.dtype)))
    u, v = 0.5 * (u + u_loop), 0.5 * (v + v_loop)
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
