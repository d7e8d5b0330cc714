# Accepted: forward-over-reverse, the jvp of the gradient along v.
import jax
import jax.numpy as jnp


def f(w, s, lam):
    return jax.nn.logsumexp(s * w) + 0.5 * lam * jnp.dot(w, w)


def solve(w, v, s, lam):
    _, hv = jax.jvp(jax.grad(lambda u: f(u, s, lam)), (w,), (v,))
    return {"hv": hv}
