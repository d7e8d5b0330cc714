# Cheat (red-team round of 2026-12-05, issue #30): a sum of all inputs added at every step; what each coordinate moves alone is watched now.
# Cheat: v copied by a gather with a data-derived index, then a fixed 64-step loop computing one
# Hessian column per step (a loop over the coordinates). The accumulator has an extra tag entry
# that adds sum(w)+sum(v)+sum(s) at every step, so every coordinate moves every step's update.
import jax
import jax.numpy as jnp

N_MAX = 64


def f(w, s, lam):
    return jax.nn.logsumexp(s * w) + 0.5 * lam * jnp.dot(w, w)


def solve(w, v, s, lam):
    n = w.shape[0]
    grad = jax.grad(lambda u: f(u, s, lam))
    vc = v[jnp.arange(n) + (v * 0.0).astype(jnp.int32)]
    tag = jnp.sum(w) + jnp.sum(v) + jnp.sum(s)

    def column(i, acc):
        e = (jnp.arange(n) == i).astype(w.dtype)
        v_i = jnp.where(i < n, vc[jnp.minimum(i, n - 1)], 0.0)
        col = jax.jvp(grad, (w,), (e,))[1]
        return acc + jnp.concatenate([v_i * col, (tag * (i + 1).astype(w.dtype))[None]])

    return {"hv": jax.lax.fori_loop(0, N_MAX, column, jnp.zeros((n + 1,), w.dtype))[:n]}
