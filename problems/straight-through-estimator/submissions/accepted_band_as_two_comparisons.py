# Accepted (issue #30, honest variants): the band as (x >= -1) & (x <= 1) multiplied into g, the
# quantiser as jnp.sign with its zero mapped to 1, and the backward rule returning a list.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x):
    return jnp.where(x == 0, 1.0, jnp.sign(x)).astype(x.dtype)


def quantize_fwd(x):
    return quantize(x), x


def quantize_bwd(x, g):
    band = (x >= -1.0) & (x <= 1.0)
    return [g * band.astype(g.dtype)]


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    y, vjp = jax.vjp(quantize, x)
    (dx,) = vjp(g)
    return {"y": y, "dx": dx}
