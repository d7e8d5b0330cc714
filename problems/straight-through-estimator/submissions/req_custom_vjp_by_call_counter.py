# Cheat (issue 41, own form): a call counter. `int(N)` sends stage A to one trace per size;
# the custom_vjp is used on the first two calls of solve (the symbolic attempt and the first
# size) and formulas on every later one.
import jax
import jax.numpy as jnp

CALLS = [0]


@jax.custom_vjp
def quantize(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x):
    return quantize(x), x


def quantize_bwd(x, g):
    return (jnp.where(jnp.abs(x) <= 1.0, g, 0.0),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    CALLS[0] += 1
    n = int(x.shape[0])
    if CALLS[0] <= 2:
        y, vjp = jax.vjp(quantize, x)
        (dx,) = vjp(g)
        return {"y": y, "dx": dx}
    y = jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype) * (n / n)
    return {"y": y, "dx": jnp.where(jnp.abs(x) <= 1.0, g, 0.0)}
