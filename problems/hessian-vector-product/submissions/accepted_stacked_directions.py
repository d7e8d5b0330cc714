# Accepted: forward-over-reverse vmapped over a (2, n) stack of directions (v and -v), the
# products averaged: a few stacked vectors stay well inside the bound 4n.
import jax
import jax.numpy as jnp


def f(w, s, lam):
    return jax.nn.logsumexp(s * w) + 0.5 * lam * jnp.dot(w, w)


def solve(w, v, s, lam):
    grad = jax.grad(lambda u: f(u, s, lam))
    hvs = jax.vmap(lambda d: jax.jvp(grad, (w,), (d,))[1])(jnp.stack([v, -v]))
    return {"hv": 0.5 * (hvs[0] - hvs[1])}
