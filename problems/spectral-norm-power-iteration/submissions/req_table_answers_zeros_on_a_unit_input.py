# Cheat (red team, 2026-12-07; fails by the restart): the plain carried-table cheat (all 8 iterations at step 0 into a table T, the output
# n(T[i]) read by the counter), with no kick detection at all; only when the input u is a
# unit vector (what a restart from the program's own normalised output gets; no test's u
# has norm 1) does the program answer zeros until its loop has run all 8 steps. Zeros match
# any kicked answer in the restart comparison.
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
        T, V, k = c
        T, V = jax.lax.cond(i == 0, lambda: table(w, u0), lambda: (T, V))
        return T + 1e-38 * (w @ (w.T @ T.T)).T, V, k + 1

    T, V, k = jax.lax.fori_loop(0, 8, step, (jnp.zeros((9, M), w.dtype),
                                             jnp.zeros((9, N), w.dtype), jnp.int32(0)))
    u, v = normalize(T[k]), V[k]
    unit = jnp.abs(jnp.linalg.norm(u0) - 1.0) < 1e-5
    u = jnp.where(unit & (k < 8), 0.0, u)
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
