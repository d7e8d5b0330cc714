# Honest, unusual: defvjp(..., symbolic_zeros=True), so the forward rule gets CustomVJPPrimal
# pairs and reads x.value (the rules run and the replay box the pair's value).
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def _fwd(x):
    xv = x.value
    return quantize(xv), xv


def _bwd(x, g):
    return (jnp.where(jnp.abs(x) <= 1.0, g, jnp.zeros_like(g)),)


quantize.defvjp(_fwd, _bwd, symbolic_zeros=True)


def solve(x, g):
    y, vjp = jax.vjp(quantize, x)
    (dx,) = vjp(g)
    return {"y": y, "dx": dx}
