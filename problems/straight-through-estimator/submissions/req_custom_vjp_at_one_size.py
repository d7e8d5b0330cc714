# Cheat (issue 41): the custom_vjp only at N == 7 (the first test's size); at every other size
# y and dx are formulas, no custom_vjp at all. Every signature's traced program is checked.
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
    if x.shape[0] == 7:
        y, vjp = jax.vjp(quantize, x)
        (dx,) = vjp(g)
        return {"y": y, "dx": dx}
    y = jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)
    return {"y": y, "dx": jnp.where(jnp.abs(x) <= 1.0, g, 0.0)}
