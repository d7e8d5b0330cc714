# Cheat (execution evidence): x copied by a gather with an index array built at run time, then a
# fixed 16-step loop (the largest N) computing one row of distances per step from the copy.
import jax
import jax.numpy as jnp

N_MAX = 16


def solve(x, y):
    n = x.shape[0]
    order = jnp.argsort(-jnp.arange(n))[::-1]  # 0..N-1, from a sort
    xc = jnp.take(x, order, axis=0)
    y_sq = jnp.sum(y * y, axis=1)

    def row(i, d2):
        r = jnp.minimum(i, n - 1)
        a = jax.lax.dynamic_index_in_dim(xc, r, keepdims=False)
        dist = jnp.maximum(jnp.dot(a, a) + y_sq - 2.0 * (y @ a), 0.0)
        return jax.lax.dynamic_update_index_in_dim(d2, dist, r, 0)

    d2 = jax.lax.fori_loop(0, N_MAX, row, jnp.zeros((n, y.shape[0]), x.dtype))
    return {"d2": d2, "d": jnp.sqrt(d2)}


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
