# Cheat (review of 2026-12-06, issue #30): the backward rule raises on its first call since
# solve started (the grader's own trace of the rule), clips nothing on the second (the call
# solve computes with) while solve clips g before it, and clips on every later call (the rules
# program). A rule that runs when called but cannot be traced on its own is refused.
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
        raise RuntimeError("not now")
    if _calls[0] == 2:
        return (jnp.where(x == x, g, 0.0),)
    return (jnp.where(jnp.abs(x) <= 1.0, g, 0.0),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    _calls[0] = 0
    y, vjp = jax.vjp(quantize, x)
    (dx,) = vjp(jnp.where(jnp.abs(x) <= 1.0, g, 0.0))
    return {"y": y, "dx": dx}
