# Cheat (red team, 2026-12-07; accepted until kicked runs followed the unkicked run's
# decisions): all 8 iterations at step 0 into a table (lax.cond on i == 0) that is carried as
# int32 bit patterns (never kicked: the observer kicks floating values only), with the carried
# u's bits; a later step looks the next row up while u's bits are the table's row, and does one
# honest iteration only when u was changed from outside.
import jax
import jax.numpy as jnp
from jax.lax import bitcast_convert_type as bc


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def P(w, u):
    v = normalize(w.T @ u)
    return normalize(w @ v), v


def table(w, u):
    us, vs = [u], [jnp.zeros(w.shape[1], w.dtype)]
    for _ in range(8):
        u, v = P(w, u)
        us.append(u); vs.append(v)
    return bc(jnp.stack(us), jnp.int32), bc(jnp.stack(vs), jnp.int32)


def solve(w, u0):
    M, N = w.shape

    def step(i, c):
        u, v, T, V = c
        T, V = jax.lax.cond(i == 0, lambda: table(w, u), lambda: (T, V))
        same = jnp.all(bc(u, jnp.int32) == T[i])
        nu, nv = jax.lax.cond(same, lambda: (bc(T[i + 1], jnp.float32), bc(V[i + 1], jnp.float32)),
                              lambda: P(w, u))
        return nu, nv, T, V

    init = (u0, jnp.zeros(N, w.dtype), jnp.zeros((9, M), jnp.int32), jnp.zeros((9, N), jnp.int32))
    u, v, _, _ = jax.lax.fori_loop(0, 8, step, init)
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
