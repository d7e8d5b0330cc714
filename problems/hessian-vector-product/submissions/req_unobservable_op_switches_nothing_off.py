# Cheat (execution evidence): H v one Hessian column per step of a fixed 64-step loop, the
# coordinate of v picked by a one-hot product (no indexing op at the counter).
import jax
import jax.numpy as jnp

N_MAX = 64


def f(w, s, lam):
    return jax.nn.logsumexp(s * w) + 0.5 * lam * jnp.dot(w, w)


def solve(w, v, s, lam):
    n = w.shape[0]
    grad = jax.grad(lambda u: f(u, s, lam))

    def column(i, acc):
        e = (jnp.arange(n) == i).astype(w.dtype)
        return acc + jnp.dot(e, v) * jax.jvp(grad, (w,), (e,))[1]

    return {"hv": jax.lax.fori_loop(0, N_MAX, column, jnp.zeros_like(w))}


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
