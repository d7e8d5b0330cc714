# Honest (red team, 2026-12-07): one iteration per step; the carried u is kept as its int32 bit
# pattern (decoded at the start of each step, encoded at the end), v as a float. The kicks
# change a float's bits carried as integers as that float.
import jax
import jax.numpy as jnp
from jax.lax import bitcast_convert_type as bc


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    def step(_, c):
        ub, _ = c
        v = normalize(w.T @ bc(ub, jnp.float32))
        return bc(normalize(w @ v), jnp.int32), v

    ub, v = jax.lax.fori_loop(0, 8, step, (bc(u, jnp.int32), jnp.zeros(w.shape[1], w.dtype)))
    u = bc(ub, jnp.float32)
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
