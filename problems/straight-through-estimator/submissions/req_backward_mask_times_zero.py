# Issue #30, "identities in disguise", a new form (SHOULD be requirement_failed). The backward
# rule computes the band mask, but multiplies what it masked by 0.0 and adds the raw gradient:
# the clipping in it is dead, and the band is applied outside, before the rule.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x):
    return quantize(x), x


def quantize_bwd(x, g):
    return (0.0 * jnp.where(jnp.abs(x) <= 1.0, g, 0.0) + g,)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    _, vjp = jax.vjp(quantize, x)
    (dx,) = vjp(g * (jnp.abs(x) <= 1.0).astype(g.dtype))
    return {"y": quantize(x), "dx": dx}
