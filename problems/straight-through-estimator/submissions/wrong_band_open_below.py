# The backward rule's band is open at one end: it passes g wherever x <= 1, also far below -1.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x):
    return quantize(x), x


def quantize_bwd(x, g):
    return (jnp.where(x <= 1.0, g, 0.0),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    _, vjp = jax.vjp(quantize, x)
    (dx,) = vjp(g)
    return {"y": quantize(x), "dx": dx}
