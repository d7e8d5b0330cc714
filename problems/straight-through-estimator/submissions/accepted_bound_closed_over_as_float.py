# Honest (issue 41): a custom_vjp of two arguments whose second is a Python float closed over
# from the module; its cotangent is returned as 0.0. Only x's cotangent is compared.
import jax
import jax.numpy as jnp

BOUND = 1.0


@jax.custom_vjp
def quantize(x, bound):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x, bound):
    return quantize(x, bound), (x, bound)


def quantize_bwd(res, g):
    x, bound = res
    return jnp.where(jnp.abs(x) <= bound, g, 0.0), 0.0


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    y, vjp = jax.vjp(lambda v: quantize(v, BOUND), x)
    (dx,) = vjp(g)
    return {"y": y, "dx": dx}
