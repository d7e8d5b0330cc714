# Wrong answer: log(sum(exp(s * w))) without subtracting the maximum overflows when s_i w_i
# exceeds ~88, and the derivatives become NaN on the large tests.
import jax
import jax.numpy as jnp


def f(w, s, lam):
    return jnp.log(jnp.sum(jnp.exp(s * w))) + 0.5 * lam * jnp.sum(w * w)


def solve(w, v, s, lam):
    _, hv = jax.jvp(jax.grad(lambda u: f(u, s, lam)), (w,), (v,))
    return {"hv": hv}
