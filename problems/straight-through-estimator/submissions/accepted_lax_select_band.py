# Accepted (issue #30, honest variants): the band with lax.select on lax.le(abs(x), 1), the
# residual a tuple of x and its sign, and dx from jax.grad of a vdot inside jax.jit.
import jax
import jax.numpy as jnp
from jax import lax


@jax.custom_vjp
def quantize(x):
    return lax.select(lax.ge(x, jnp.zeros_like(x)), jnp.ones_like(x), -jnp.ones_like(x))


def quantize_fwd(x):
    y = quantize(x)
    return y, (x, y)


def quantize_bwd(res, g):
    x, _ = res
    return (lax.select(lax.le(lax.abs(x), jnp.ones_like(x)), g, jnp.zeros_like(g)),)


quantize.defvjp(quantize_fwd, quantize_bwd)


@jax.jit
def solve(x, g):
    dx = jax.grad(lambda v: jnp.vdot(quantize(v), g))(x)
    return {"y": quantize(x), "dx": dx}
