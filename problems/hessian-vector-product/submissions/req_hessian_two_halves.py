"""Right numbers, but the Hessian is built in two halves of n/2 rows each (Hessian-vector
products with the first and the last n/2 unit vectors, vmapped), each multiplied by v: neither
half is n x n, but each has n*n/2 >= 4n elements."""

import jax
import jax.numpy as jnp


def loss(w, s, lam):
    return jax.nn.logsumexp(s * w) + 0.5 * lam * jnp.sum(w * w)


def solve(w, v, s, lam):
    n = w.shape[0]
    h = n // 2
    grad = jax.grad(lambda x: loss(x, s, lam))
    rows = jax.vmap(lambda e: jax.jvp(grad, (w,), (e,))[1])  # H e_i: row i of H (H = H^T)
    first = rows(jnp.eye(h, n, dtype=w.dtype))  # rows 0 .. h - 1: (h, n)
    second = rows(jnp.eye(n - h, n, k=h, dtype=w.dtype))  # rows h .. n - 1: (n - h, n)
    return {"hv": jnp.concatenate([first @ v, second @ v])}
