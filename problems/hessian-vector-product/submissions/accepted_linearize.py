# Accepted: jax.linearize of the gradient at w, its linear map applied to v (a jvp of the
# gradient, computed once and reusable for many v).
import jax
import jax.numpy as jnp


def f(w, s, lam):
    return jax.nn.logsumexp(s * w) + 0.5 * lam * jnp.dot(w, w)


def solve(w, v, s, lam):
    _, hvp = jax.linearize(jax.grad(lambda u: f(u, s, lam)), w)
    return {"hv": hvp(v)}
