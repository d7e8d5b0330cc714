# Honest (red-team round of 2026-12-06, rejected before): the forward value from the sign bit,
# with -0.0 sent to +1: x is negative when its sign bit is set and it is not zero.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x):
    neg = jnp.signbit(x) & (x != 0)
    return jnp.where(neg, -1.0, 1.0).astype(x.dtype)


def quantize_fwd(x):
    return quantize(x), x


def quantize_bwd(x, g):
    return (jnp.where(jnp.abs(x) <= 1.0, g, 0.0),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    y, vjp = jax.vjp(quantize, x)
    return {"y": y, "dx": vjp(g)[0]}
