# Cheat (issue 41): the clipping mask |x| <= 1 is computed in solve and passed to the custom_vjp
# as a second array; the backward rule multiplies the cotangent by it, so the rules do the
# clipping only through what solve computed for them. Refused: an argument computed from x.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x, mask):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x, mask):
    return quantize(x, mask), mask


def quantize_bwd(mask, g):
    return g * mask, jnp.zeros_like(mask)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    mask = (jnp.abs(x) <= 1.0).astype(x.dtype)
    y = quantize(x, mask)
    _, vjp = jax.vjp(quantize, x, mask)
    dx, _ = vjp(g)
    return {"y": y, "dx": dx}
