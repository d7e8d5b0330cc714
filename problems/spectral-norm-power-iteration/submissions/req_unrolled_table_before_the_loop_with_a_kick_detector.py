# Cheat (red team, 2026-12-07; accepted until kicked runs followed the unkicked run's
# decisions): all 8 iterations unrolled BEFORE the loop into a table (closed over, passed
# along); each step looks the next row up while the carried u equals the table's row for its
# step, and only a u changed from outside (a kick) gets one honest iteration (lax.cond: never
# run in a real run).
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def P(w, u):
    v = normalize(w.T @ u)
    return normalize(w @ v), v


def solve(w, u0):
    N = w.shape[1]
    us, vs, u = [u0], [jnp.zeros(N, w.dtype)], u0
    for _ in range(8):
        u, v = P(w, u)
        us.append(u); vs.append(v)
    T, V = jnp.stack(us), jnp.stack(vs)

    def step(i, c):
        u, v = c
        return jax.lax.cond(jnp.all(u == T[i]), lambda: (T[i + 1], V[i + 1]), lambda: P(w, u))

    u, v = jax.lax.fori_loop(0, 8, step, (u0, jnp.zeros(N, w.dtype)))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
