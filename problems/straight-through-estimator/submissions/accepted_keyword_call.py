# Honest, unusual: the custom_vjp called with a keyword argument, quantize(x=x) (rules run as
# if called positionally, as JAX binds it).
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def _fwd(x):
    return quantize(x=x), x


def _bwd(x, g):
    return (jnp.where(jnp.abs(x) <= 1.0, g, jnp.zeros_like(g)),)


quantize.defvjp(_fwd, _bwd)


def solve(x, g):
    y = quantize(x=x)
    _, vjp = jax.vjp(lambda z: quantize(x=z), x)
    (dx,) = vjp(g)
    return {"y": y, "dx": dx}
