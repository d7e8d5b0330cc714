# Cheat (execution evidence): v copied by a gather with an index array computed from data
# (arange plus a data zero), then one coordinate of the copy per step of a fixed 64-step loop.
import jax
import jax.numpy as jnp

N_MAX = 64


def f(w, s, lam):
    return jax.nn.logsumexp(s * w) + 0.5 * lam * jnp.dot(w, w)


def solve(w, v, s, lam):
    n = w.shape[0]
    grad = jax.grad(lambda u: f(u, s, lam))
    vc = v[jnp.arange(n) + (v * 0.0).astype(jnp.int32)]  # index array computed from data

    def column(i, acc):
        e = (jnp.arange(n) == i).astype(w.dtype)
        v_i = jnp.where(i < n, vc[jnp.minimum(i, n - 1)], 0.0)
        return acc + v_i * jax.jvp(grad, (w,), (e,))[1]

    return {"hv": jax.lax.fori_loop(0, N_MAX, column, jnp.zeros_like(w))}
