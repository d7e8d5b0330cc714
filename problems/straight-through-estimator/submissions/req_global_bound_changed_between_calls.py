# Cheat (red-team round 2 of 2026-12-06, accepted before): the backward rule reads a global bound
# as a numpy constant, 1.0 for a first call whose result is dropped and inf for the one returned,
# with the clipping done outside. The traced programs printed alike (constants are not printed);
# they are now compared with their constants.
import numpy as np
import jax
import jax.numpy as jnp

BOUND = [1.0]


@jax.custom_vjp
def quantize(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x):
    return quantize(x), x


def quantize_bwd(x, g):
    lim = np.full((1,), BOUND[0], np.float32)
    return (jnp.where(jnp.abs(x) <= lim, g, jnp.zeros_like(g)),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    BOUND[0] = 1.0
    _ = jax.vjp(quantize, x)[1](g)
    BOUND[0] = np.inf
    y, vjp = jax.vjp(quantize, x)
    (dx,) = vjp(jnp.where(jnp.abs(x) <= 1.0, g, 0.0))
    BOUND[0] = 1.0
    return {"y": y, "dx": dx}
