# Accepted: reverse-over-reverse, the gradient of <grad f(w), v>.
import jax
import jax.numpy as jnp


def f(w, s, lam):
    return jax.nn.logsumexp(s * w) + 0.5 * lam * jnp.sum(w**2)


def solve(w, v, s, lam):
    grad_f = jax.grad(f)
    return {"hv": jax.grad(lambda u: jnp.vdot(grad_f(u, s, lam), v))(w)}
