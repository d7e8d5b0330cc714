# Cheat (red-team round 2 of 2026-12-06, accepted before): a nondiff argument (PAD, bound) whose
# text is alike in its first 200 characters for the dropped call (bound 1.0) and the returned one
# (bound inf): arguments are now compared whole.
from functools import partial

import numpy as np
import jax
import jax.numpy as jnp

PAD = "p" * 300


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def quantize(x, opts):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x, opts):
    return quantize(x, opts), x


def quantize_bwd(opts, x, g):
    lim = np.full((1,), opts[1], np.float32)
    return (jnp.where(jnp.abs(x) <= lim, g, jnp.zeros_like(g)),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    _ = jax.vjp(lambda v: quantize(v, (PAD, 1.0)), x)[1](g)
    y, vjp = jax.vjp(lambda v: quantize(v, (PAD, float("inf"))), x)
    (dx,) = vjp(jnp.where(jnp.abs(x) <= 1.0, g, 0.0))
    return {"y": y, "dx": dx}
