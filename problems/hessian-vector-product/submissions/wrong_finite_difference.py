# Wrong answer: a central finite difference of the gradient approximates H v. In float32 the
# roundoff (eps * |grad| / h) and the truncation (h^2 * |f'''|) cannot both be small: with
# h = 1e-3 the error is ~39x the tolerance on the worst test.
import jax
import jax.numpy as jnp


def f(w, s, lam):
    return jax.nn.logsumexp(s * w) + 0.5 * lam * jnp.sum(w * w)


def solve(w, v, s, lam):
    h = 1e-3
    g = jax.grad(f)
    return {"hv": (g(w + h * v, s, lam) - g(w - h * v, s, lam)) / (2 * h)}
