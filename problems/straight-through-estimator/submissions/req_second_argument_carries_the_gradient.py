# Cheat (issue 41): a custom_vjp of two arrays whose second argument is the answer, computed
# outside the rules (the clipped gradient); the backward rule only hands it back as x's
# cotangent. The rules run refuses an argument computed from solve's arguments.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x, carried):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x, carried):
    return quantize(x, carried), carried


def quantize_bwd(carried, g):
    return carried * (g == g), jnp.zeros_like(carried)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    carried = jnp.where(jnp.abs(x) <= 1.0, g, 0.0)
    y, vjp = jax.vjp(quantize, x, carried)
    dx, _ = vjp(g)
    return {"y": y, "dx": dx}
