# Honest (issue 41): the quantiser is a custom_vjp of two array arguments, x and the cotangent's
# scale-free partner g, returning q(x) and passing g through; its backward rule clips the
# gradient of x by |x| <= 1. y is its first result, dx its backward rule's gradient of x.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x, bound):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x, bound):
    return quantize(x, bound), (x, bound)


def quantize_bwd(res, g):
    x, bound = res
    return jnp.where(jnp.abs(x) <= bound, g, 0.0), jnp.zeros_like(bound)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    bound = jnp.ones_like(x)
    y, vjp = jax.vjp(quantize, x, bound)
    dx, _ = vjp(g)
    return {"y": y, "dx": dx}
