# Cheat (red team, 2026-12-07): all 8 iterations at step 0 into a carried table (lax.cond i ==
# 0); a step returns (1-g) T[i+1] + P(w, g u), g = 0 in the real run (u is exactly T[i]) and 1
# after a kick, so the real run's steps iterate only the zero vector. Detector: g = tanh(1e30 *
# ||u - T[i]||^2) (a saturating float op, no comparison).
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def nf(x):  # normalisation with no max/where (so no decision for the twin to take)
    return x * jax.lax.rsqrt(jnp.sum(x * x) + 1e-37)


def P(w, u):
    v = normalize(w.T @ u)
    return normalize(w @ v), v


def table(w, u):
    us, vs = [u], [jnp.zeros(w.shape[1], w.dtype)]
    for _ in range(8):
        u, v = P(w, u)
        us.append(u); vs.append(v)
    return jnp.stack(us), jnp.stack(vs)


def gate(d):
    return jnp.tanh(1e30 * d)


def solve(w, u0):
    M, N = w.shape

    def step(i, c):
        u, v, T, V = c
        T, V = jax.lax.cond(i == 0, lambda: table(w, u), lambda: (T, V))
        d = jnp.sum((u - T[i]) ** 2)
        g = gate(d)
        hv = nf(w.T @ (g * u))
        hu = nf(w @ hv)
        return (1 - g) * T[i + 1] + hu, (1 - g) * V[i + 1] + hv, T, V

    init = (u0, jnp.zeros(N, w.dtype), jnp.zeros((9, M), w.dtype), jnp.zeros((9, N), w.dtype))
    u, v, _, _ = jax.lax.fori_loop(0, 8, step, init)
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
