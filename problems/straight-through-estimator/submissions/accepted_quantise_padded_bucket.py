# Honest: the quantiser applied to x padded to a multiple of 8 (a bucket) for y, and jax.vjp at
# x's own shape for dx; the rules are elementwise, so they give the same values at both shapes.
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
    n = x.shape[0]
    padded = jnp.pad(x, (0, (-n) % 8))
    y = quantize(padded)[:n]
    _, vjp = jax.vjp(quantize, x)
    (dx,) = vjp(g)
    return {"y": y, "dx": dx}
