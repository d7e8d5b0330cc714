# Cheat (red team, 2026-12-07): fails power-iteration-loop by trajectory_restart, see expected.toml.
# CHEAT: at step 0 (lax.cond on the counter) all 8 iterations are done, unrolled, into a
# carried table; every later step only copies table[i+1] into u. The answer after the loop is
# read from the carried table at the carried step count: the table is "alive" when kicked.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u0):
    M, N = w.shape

    def build(u):
        us, vs = [u], [jnp.zeros(N, w.dtype)]
        for _ in range(8):
            v = normalize(w.T @ us[-1])
            us.append(normalize(w @ v))
            vs.append(v)
        return jnp.stack(us), jnp.stack(vs)

    def step(i, carry):
        k, tu, tv, u = carry
        tu, tv = jax.lax.cond(i == 0, lambda: build(u), lambda: (tu, tv))
        return k + 1, tu, tv, tu[i + 1]

    init = (jnp.int32(0), jnp.zeros((9, M), w.dtype), jnp.zeros((9, N), w.dtype), u0)
    k, tu, tv, _ = jax.lax.fori_loop(0, 8, step, init)
    u, v = tu[k], tv[k]
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
