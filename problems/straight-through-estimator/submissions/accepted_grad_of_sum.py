# Another style: dx is jax.grad of a scalar, sum(quantize(v) * g), whose cotangent at quantize(v)
# is g, so the backward rule receives exactly g; y is a separate call of quantize.
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
    dx = jax.grad(lambda v: jnp.sum(quantize(v) * g))(x)
    return {"y": quantize(x), "dx": dx}
