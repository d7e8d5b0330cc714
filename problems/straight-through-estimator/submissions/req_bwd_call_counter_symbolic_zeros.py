# Cheat: the backward-rule call counter (req_bwd_call_counter.py) with symbolic_zeros=True,
# whose forward rule gets CustomVJPPrimal pairs: the replay boxes them too.
import jax
import jax.numpy as jnp

_calls = [0]


@jax.custom_vjp
def quantize(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x):
    return quantize(x.value), x.value


def quantize_bwd(x, g):
    _calls[0] += 1
    if _calls[0] == 1:
        return (jnp.where(x == x, g, 0.0),)
    return (jnp.where(jnp.abs(x) <= 1.0, g, 0.0),)


quantize.defvjp(quantize_fwd, quantize_bwd, symbolic_zeros=True)


def solve(x, g):
    _calls[0] = 0
    y, vjp = jax.vjp(quantize, x)
    (dx,) = vjp(jnp.where(jnp.abs(x) <= 1.0, g, 0.0))
    return {"y": y, "dx": dx}
