# Issue #30, "identities in disguise", a new form (SHOULD be requirement_failed). Both rules
# do their comparisons, but on x closed over from solve, not on their own argument or
# residual: the function returns sign(x_outer) + (v - v), the backward rule masks by |x_outer|
# and ignores its residual. Neither rule computes anything from what it is given.
import jax
import jax.numpy as jnp


def solve(x, g):
    @jax.custom_vjp
    def quantize(v):
        return jnp.where(x >= 0, 1.0, -1.0).astype(v.dtype) + (v - v)

    def quantize_fwd(v):
        return quantize(v), v

    def quantize_bwd(v, ct):
        return (jnp.where(jnp.abs(x) <= 1.0, ct, 0.0),)

    quantize.defvjp(quantize_fwd, quantize_bwd)
    y, vjp = jax.vjp(quantize, x)
    (dx,) = vjp(g)
    return {"y": y, "dx": dx}
