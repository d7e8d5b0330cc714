# Cheat (red team, 2026-12-07; accepted until kicked runs followed the unkicked run's
# decisions): two iterations per step at steps 0-3 into a carried history H (rows u_0..u_8),
# steps 4-7 idle; the carried output u is H[k] (read by the counter). A kick is detected by u's
# norm (the table's rows are unit vectors; a kick moves the norm), remembered in a carried bool:
# from then on one honest iteration per step.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def P(w, u):
    v = normalize(w.T @ u)
    return normalize(w @ v), v


def solve(w, u0):
    M, N = w.shape

    def fill(i, H, G):
        a, va = P(w, H[2 * i])
        b, vb = P(w, a)
        return (H.at[2 * i + 1].set(a).at[2 * i + 2].set(b),
                G.at[2 * i + 1].set(va).at[2 * i + 2].set(vb))

    def step(i, c):
        u, v, H, G, off = c
        H, G = jax.lax.cond(i < 4, lambda: fill(i, H, G), lambda: (H, G))
        nrm = jnp.linalg.norm(u)
        off = off | ((jnp.abs(nrm - 1.0) > 1e-5) & (i > 0))
        return (*jax.lax.cond(off, lambda: P(w, u), lambda: (H[i + 1], G[i + 1])), H, G, off)

    H0 = jnp.zeros((9, M), w.dtype).at[0].set(normalize(u0))
    init = (u0, jnp.zeros(N, w.dtype), H0, jnp.zeros((9, N), w.dtype), jnp.array(False))
    u, v, _, _, _ = jax.lax.fori_loop(0, 8, step, init)
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
