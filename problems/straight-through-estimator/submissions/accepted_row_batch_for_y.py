# Honest (red-team round 2 of 2026-12-06): y = quantize(x[None, :])[0], a batch-style layer, and
# dx from jax.vjp(quantize, x).
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x):
    return quantize(x), x


def quantize_bwd(x, g):
    return (jnp.where(jnp.abs(x) <= 1.0, g, jnp.zeros_like(g)),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    y = quantize(x[None, :])[0]
    dx = jax.vjp(quantize, x)[1](g)[0]
    return {"y": y, "dx": dx}
