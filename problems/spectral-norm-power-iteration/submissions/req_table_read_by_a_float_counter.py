# Cheat (red team, 2026-12-07): fails power-iteration-loop by trajectory_restart, see expected.toml.
# CHEAT: all 8 iterates unrolled before the loop into a table; the loop carries only a float
# counter c (plus a w-dependent value that never matters) and the answer after the loop is
# table[round(c)]. Kicking c moves the answer (alive), and c is no copy of u or v.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    us, vs = [u], [jnp.zeros(w.shape[1], w.dtype)]
    for _ in range(8):
        v = normalize(w.T @ us[-1])
        us.append(normalize(w @ v))
        vs.append(v)
    tu, tv = jnp.stack(us), jnp.stack(vs)

    def step(i, carry):
        c, acc = carry
        return c + 1.0, acc * 0.5 + jnp.sum(w) * 1e-30

    c, acc = jax.lax.fori_loop(0, 8, step, (jnp.float32(0.0), jnp.float32(0.0)))
    k = jnp.clip(jnp.floor(c + 1e-3).astype(jnp.int32), 0, 8)
    uo, vo = tu[k] + acc, tv[k]
    sigma = uo @ (w @ vo)
    return {"sigma": sigma, "u": uo, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
