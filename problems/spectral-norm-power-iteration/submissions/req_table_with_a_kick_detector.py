# Cheat (red team, 2026-12-07; accepted until kicked runs followed the unkicked run's
# decisions): all 8 iterations at step 0 into a table (lax.cond on i == 0); each later step
# looks up T[i+1] when the carried u still equals T[i] (the real run: idle steps), and only when
# u was changed from outside (a kick) does one honest iteration from it.
import jax
import jax.numpy as jnp


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
    return jnp.stack(us), jnp.stack(vs)


def solve(w, u0):
    M, N = w.shape

    def step(i, c):
        u, v, T, V = c
        T, V = jax.lax.cond(i == 0, lambda: table(w, u), lambda: (T, V))
        same = jnp.all(u == T[i])
        nu, nv = jax.lax.cond(same, lambda: (T[i + 1], V[i + 1]), lambda: P(w, u))
        return nu, nv, T, V

    init = (u0, jnp.zeros(N, w.dtype), jnp.zeros((9, M), w.dtype), jnp.zeros((9, N), w.dtype))
    u, v, _, _ = jax.lax.fori_loop(0, 8, step, init)
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
