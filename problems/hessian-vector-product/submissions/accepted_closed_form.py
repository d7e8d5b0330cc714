# Accepted: the product worked out by hand. With p = softmax(s * w) the Hessian is
# diag(s^2 p) - (s p)(s p)^T + lam I, and its product with v needs only vectors and one dot.
import jax
import jax.numpy as jnp


def solve(w, v, s, lam):
    p = jax.nn.softmax(s * w)
    sp = s * p
    return {"hv": s * sp * v - sp * jnp.dot(sp, v) + lam * v}
