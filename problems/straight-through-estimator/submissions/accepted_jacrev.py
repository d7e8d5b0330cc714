# Honest: dx as the transposed Jacobian of the quantiser applied to g (jax.jacrev calls the
# backward rule once per output, under vmap); y from calling it.
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
    return {"y": quantize(x), "dx": jax.jacrev(quantize)(x).T @ g}
