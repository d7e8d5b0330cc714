# Cheat (execution evidence; a former known limit): a token loop whose steps read w but change u
# by 1e-30 of a product (nothing, in float32), then the eight power iterations after it with
# every product and norm spelled element by element (no dot, no reduction).
import jax
import jax.numpy as jnp


def _norm_by_hand(x):
    total = x[0] * x[0]
    for i in range(1, x.shape[0]):
        total = total + x[i] * x[i]
    return x / jnp.maximum(jnp.sqrt(total), 1e-12)


def solve(w, u):
    m, n = w.shape

    def token(_, u):
        return u + 1e-30 * (w @ (w.T @ u))

    u = jax.lax.fori_loop(0, 8, token, u)
    for _ in range(8):
        v = w[0] * u[0]
        for i in range(1, m):
            v = v + w[i] * u[i]
        v = _norm_by_hand(v)
        u = w[:, 0] * v[0]
        for j in range(1, n):
            u = u + w[:, j] * v[j]
        u = _norm_by_hand(u)
    wv = w[:, 0] * v[0]
    for j in range(1, n):
        wv = wv + w[:, j] * v[j]
    sigma = u[0] * wv[0]
    for i in range(1, m):
        sigma = sigma + u[i] * wv[i]
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
