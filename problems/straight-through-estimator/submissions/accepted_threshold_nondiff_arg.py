# Honest: the clipping bound is a nondiff argument of the custom_vjp (a Python float), and the
# residuals are a tuple.
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def quantize(x, bound):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x, bound):
    return quantize(x, bound), (x,)


def quantize_bwd(bound, res, g):
    (x,) = res
    return (jnp.where(jnp.abs(x) <= bound, g, jnp.zeros_like(g)),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    dx = jax.vjp(lambda v: quantize(v, 1.0), x)[1](g)[0]
    return {"y": quantize(x, 1.0), "dx": dx}
