# A decoy: a complete custom_vjp quantiser gives y, but dx is a formula written beside it, so
# the backward rule is never reached (nothing differentiates quantize).
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x):
    return quantize(x), x


def quantize_bwd(x, g):
    return (jnp.where(jnp.abs(x) <= 1.0, g, 0.0),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    return {"y": quantize(x), "dx": jnp.where(jnp.abs(x) <= 1.0, g, 0.0)}
