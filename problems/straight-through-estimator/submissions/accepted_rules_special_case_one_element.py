# Honest, unusual: the backward rule special-cases a one-element x in Python (a decision on the
# shape, so the rules are exported at every test's shape, not once); it clips at every size.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x):
    return quantize(x), x


def quantize_bwd(x, g):
    if x.shape[0] == 1:
        keep = jnp.abs(x[0]) <= 1.0
        return (jnp.where(keep, g, jnp.zeros_like(g)),)
    return (jnp.where(jnp.abs(x) <= 1.0, g, jnp.zeros_like(g)),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    y, vjp = jax.vjp(quantize, x)
    (dx,) = vjp(g)
    return {"y": y, "dx": dx}
