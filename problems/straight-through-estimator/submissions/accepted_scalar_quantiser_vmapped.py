# Honest (issue 41): the quantiser is written for one scalar and mapped over x with jax.vmap,
# for y and, through jax.vjp of the mapped function, for dx.
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
    mapped = jax.vmap(quantize)
    y, vjp = jax.vjp(mapped, x)
    (dx,) = vjp(g)
    return {"y": y, "dx": dx}
