# A decoy: the custom_vjp's result and its backward rule's result are kept in the returned
# values only as products with 0 (and a jnp.where whose constant condition never picks
# them), beside formulas that compute the answer. Neither counts as used.
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
    _, vjp = jax.vjp(quantize, x)
    y = jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype) + 0.0 * quantize(x)
    dx = jnp.where(True, jnp.where(jnp.abs(x) <= 1.0, g, 0.0), vjp(g)[0])
    return {"y": y, "dx": dx}
