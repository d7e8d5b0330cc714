# Issue #30, "identities in disguise" (SHOULD be requirement_failed). The custom_vjp returns a
# value computed beside it (closed over) plus 0.0 * x: its result reaches y, its backward rule
# gives dx, but the quantisation is not in it. The rule now asks that the function compute its
# value from its argument by a sign or comparison that is not multiplied by 0.
import jax
import jax.numpy as jnp


def solve(x, g):
    q = jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)

    @jax.custom_vjp
    def quantize(v):
        return q + 0.0 * v

    def quantize_fwd(v):
        return quantize(v), v

    def quantize_bwd(v, ct):
        return (jnp.where(jnp.abs(v) <= 1.0, ct, 0.0),)

    quantize.defvjp(quantize_fwd, quantize_bwd)
    y, vjp = jax.vjp(quantize, x)
    (dx,) = vjp(g)
    return {"y": y, "dx": dx}
