# Honest: the backward rule keeps g where clipping x to [-1, 1] leaves it unchanged.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x):
    return jnp.sign(x) + (x == 0).astype(x.dtype) + jnp.where(jnp.signbit(x) & (x == 0), -0.0, 0.0)


def quantize_fwd(x):
    return quantize(x), x


def quantize_bwd(x, g):
    return (g * (jnp.clip(x, -1.0, 1.0) == x).astype(g.dtype),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    return {"y": quantize(x), "dx": jax.grad(lambda v: jnp.vdot(quantize(v), g))(x)}
