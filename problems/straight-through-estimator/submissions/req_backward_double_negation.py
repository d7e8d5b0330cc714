# Issue #30, "identities in disguise" (SHOULD be requirement_failed). The backward rule returns
# -(-g): not the cotangent object itself, so it passed the identity check, but it does no
# clipping; the band is applied to g before it enters the rule. The rule now asks that the
# backward rule itself mask the gradient by a comparison of its residual.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x):
    return quantize(x), x


def quantize_bwd(x, g):
    return (-(-g),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    _, vjp = jax.vjp(quantize, x)
    (dx,) = vjp(jnp.where(jnp.abs(x) <= 1.0, g, 0.0))
    return {"y": quantize(x), "dx": dx}
