# Right numbers, but the closed-form Hessian is written out as an n x n matrix (an outer product
# and an identity) before the matrix-vector product.
import jax
import jax.numpy as jnp


def solve(w, v, s, lam):
    p = jax.nn.softmax(s * w)
    sp = s * p
    h = jnp.diag(s * sp) - jnp.outer(sp, sp) + lam * jnp.eye(w.shape[0], dtype=w.dtype)
    return {"hv": h @ v}
