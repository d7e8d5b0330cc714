# Cheat (red-team round of 2026-12-06, issue #30): the backward rule counts its calls since
# solve started; its first call (the one solve uses) clips nothing while solve clips g before
# it, and every later call clips. Each rule call is traced once and replayed, for solve and for
# the rules program alike, so the export runs the rule solve used.
import jax
import jax.numpy as jnp

_calls = [0]


@jax.custom_vjp
def quantize(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x):
    return quantize(x), x


def quantize_bwd(x, g):
    _calls[0] += 1
    if _calls[0] == 1:
        return (jnp.where(x == x, g, 0.0),)
    return (jnp.where(jnp.abs(x) <= 1.0, g, 0.0),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    _calls[0] = 0
    y, vjp = jax.vjp(quantize, x)
    (dx,) = vjp(jnp.where(jnp.abs(x) <= 1.0, g, 0.0))
    return {"y": y, "dx": dx}
