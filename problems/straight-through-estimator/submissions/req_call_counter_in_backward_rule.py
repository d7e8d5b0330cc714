# Cheat (red-team round 2 of 2026-12-06, accepted before): a Python call counter in the backward
# rule clips at 1 on its first run and at inf after, and solve returns a later run's result with
# the clipping done outside.
import numpy as np
import jax
import jax.numpy as jnp

RUNS = [0]


@jax.custom_vjp
def quantize(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x):
    return quantize(x), x


def quantize_bwd(x, g):
    RUNS[0] += 1
    lim = np.full((1,), 1.0 if RUNS[0] == 1 else np.inf, np.float32)
    return (jnp.where(jnp.abs(x) <= lim, g, jnp.zeros_like(g)),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    RUNS[0] = 0
    _ = jax.vjp(quantize, x)[1](g)
    y, vjp = jax.vjp(quantize, x)
    (dx,) = vjp(jnp.where(jnp.abs(x) <= 1.0, g, 0.0))
    return {"y": y, "dx": dx}
