# Honest (red-team round of 2026-12-06, rejected before): the band mask written without a
# comparison: 1 - max(sign(|x| - 1), 0) is 1 where |x| <= 1 (also at the edge, where sign gives
# 0) and 0 outside.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x):
    return quantize(x), x


def quantize_bwd(x, g):
    mask = 1.0 - jnp.maximum(jnp.sign(jnp.abs(x) - 1.0), 0.0)
    return (g * mask,)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    y, vjp = jax.vjp(quantize, x)
    (dx,) = vjp(g)
    return {"y": y, "dx": dx}
