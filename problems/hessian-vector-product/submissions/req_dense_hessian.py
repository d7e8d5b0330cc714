# Right numbers, but jax.hessian builds the dense n x n matrix before multiplying by v.
import jax
import jax.numpy as jnp


def f(w, s, lam):
    return jax.nn.logsumexp(s * w) + 0.5 * lam * jnp.sum(w * w)


def solve(w, v, s, lam):
    return {"hv": jax.hessian(f)(w, s, lam) @ v}
