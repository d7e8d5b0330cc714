# Issue #30, "identities in disguise": the function and its forward rule "compare" x with
# +inf (never greater), so they return x itself; the sign is taken outside, on their result.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x):
    return jnp.where(x > jnp.inf, 1.0, x).astype(x.dtype)


def quantize_fwd(x):
    return quantize(x), x


def quantize_bwd(x, g):
    return (jnp.where(jnp.abs(x) <= 1.0, g, jnp.zeros_like(g)),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    _, vjp = jax.vjp(quantize, x)
    (dx,) = vjp(g)
    q = quantize(x)
    return {"y": jnp.where(q >= 0, 1.0, -1.0).astype(x.dtype), "dx": dx}
