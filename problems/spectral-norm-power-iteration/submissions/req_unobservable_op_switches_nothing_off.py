# Cheat (execution evidence): all eight iterations at step 0 by an inner fori_loop whose trip
# count is where(i == 0, 8, 0) plus a data-derived zero; steps 2..8 run no iteration.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    zero = (jnp.abs(w).sum() * 0.0).astype(jnp.int32)

    def one(_, c):
        u, v = c
        v = normalize(w.T @ u)
        return normalize(w @ v), v

    def step(i, c):
        n = jnp.where(i == 0, 8, 0) + zero
        return jax.lax.fori_loop(0, n, one, c)

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype)))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}


# --- appended: one op the observer does not evaluate (stablehlo.popcnt on a constant) ---
import functools as _ft
import jax as _jax
import jax.numpy as _jnp
_orig_solve = solve
@_ft.wraps(_orig_solve)
def solve(*a, **kw):
    out = dict(_orig_solve(*a, **kw))
    k = next(iter(out))
    z = _jax.lax.population_count(_jnp.arange(3, dtype=_jnp.int32)).sum()
    out[k] = out[k] + (z * 0).astype(out[k].dtype)
    return out
