# Cheat (red-team round 5 of 2026-12-06, issue #30): a 65-step fori_loop, one Hessian column per
# step picked by a one-hot tangent, each folded in half at its own step and half at the next, so
# no coordinate moves the loop's state at one step only. A loop over the coordinates.
import jax
import jax.numpy as jnp
N_MAX = 64
def f(w, s, lam):
    return jax.nn.logsumexp(s * w) + 0.5 * lam * jnp.dot(w, w)
def solve(w, v, s, lam):
    n = w.shape[0]
    grad = jax.grad(lambda u: f(u, s, lam))
    def col(i):
        e = (jnp.arange(n) == i).astype(w.dtype)
        return jnp.dot(e, v) * jax.jvp(grad, (w,), (e,))[1]
    def step(t, acc):
        return acc + 0.5 * col(t) + 0.5 * col(t - 1)
    return {"hv": jax.lax.fori_loop(0, N_MAX + 1, step, jnp.zeros_like(w))}
