# Cheat (red-team round of 2026-12-06, issue #30): the honest custom_vjp at N == 7 (the first
# test's shape); at every other N a second custom_vjp whose backward rule clips nothing
# (x == x), with g clipped outside, before the rule. The rules exported at each shape are the
# ones solve used there.
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


@jax.custom_vjp
def quantize2(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize2_fwd(x):
    return quantize2(x), x


def quantize2_bwd(x, g):
    return (jnp.where(x == x, g, 0.0),)


quantize2.defvjp(quantize2_fwd, quantize2_bwd)


def solve(x, g):
    if x.shape[0] == 7:
        y, vjp = jax.vjp(quantize, x)
        (dx,) = vjp(g)
        return {"y": y, "dx": dx}
    y, vjp = jax.vjp(quantize2, x)
    (dx,) = vjp(jnp.where(jnp.abs(x) <= 1.0, g, 0.0))
    return {"y": y, "dx": dx}
