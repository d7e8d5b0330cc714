# Honest (issue 41): a custom_vjp of three arguments, x and the band's bounds as arrays made in
# solve from no input (a lower bound of x's shape, an upper one a scalar), with a keyword call
# for y and jax.grad for dx; the backward rule clips x's gradient by lo <= x <= hi and returns
# zero cotangents for the bounds.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x, lo, hi):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x, lo, hi):
    return quantize(x, lo, hi), (x, lo, hi)


def quantize_bwd(res, g):
    x, lo, hi = res
    keep = (x >= lo) & (x <= hi)
    return jnp.where(keep, g, 0.0), jnp.zeros_like(lo), jnp.zeros_like(hi)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    lo = jnp.full_like(x, -1.0)
    hi = jnp.asarray(1.0, x.dtype)
    y = quantize(x, lo=lo, hi=hi)
    dx = jax.grad(lambda v: jnp.vdot(quantize(v, lo, hi), g))(x)
    return {"y": y, "dx": dx}
