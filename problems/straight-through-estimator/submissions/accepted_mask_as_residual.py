# Honest: the forward rule saves the band |x| <= 1 as a float mask, and the backward rule
# multiplies the cotangent by it.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x):
    return quantize(x), (jnp.abs(x) <= 1.0).astype(x.dtype)


def quantize_bwd(mask, g):
    return (g * mask,)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    y, vjp = jax.vjp(quantize, x)
    (dx,) = vjp(g)
    return {"y": y, "dx": dx}
