# A decoy: the custom_vjp is defined and called, but its result is thrown away; both outputs
# come from formulas written beside it (the gradient as a mask). The numbers are right, and any
# custom_vjp call used to satisfy the requirement: now its result must reach the returned
# values and its backward rule must produce the returned gradient.
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
    quantize(x)  # called, and nothing is done with it
    y = jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)
    dx = jnp.where(jnp.abs(x) <= 1.0, g, 0.0)
    return {"y": y, "dx": dx}
