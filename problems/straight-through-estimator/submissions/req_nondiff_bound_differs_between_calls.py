# Cheat (red-team round of 2026-12-06, accepted before): one custom_vjp with a nondiff clipping
# bound. The first call (bound=1.0, honest) is differentiated and thrown away; the call whose
# results are returned uses bound=1e30 (clips nothing) and the clipping is applied to the
# cotangent outside. Requirement 2 replays the first call's statics.
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def quantize(x, bound):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x, bound):
    return quantize(x, bound), x


def quantize_bwd(bound, x, g):
    return (jnp.where(jnp.abs(x) <= bound, g, 0.0),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    _ = jax.vjp(lambda v: quantize(v, 1.0), x)[1](g)
    y, vjp = jax.vjp(lambda v: quantize(v, 1e30), x)
    (dx,) = vjp(jnp.where(jnp.abs(x) <= 1.0, g, 0.0))
    return {"y": y, "dx": dx}
