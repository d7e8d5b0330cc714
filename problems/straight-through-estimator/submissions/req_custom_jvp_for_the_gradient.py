# y from the custom_vjp, but dx from a jax.custom_jvp's rule transposed by jax.vjp: the
# custom_vjp's backward rule is never used, and the message names the custom_jvp.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x):
    return quantize(x), x


def quantize_bwd(x, g):
    return (jnp.where(jnp.abs(x) <= 1.0, g, 0.0),)


quantize.defvjp(quantize_fwd, quantize_bwd)


@jax.custom_jvp
def quantize_jvp(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


@quantize_jvp.defjvp
def quantize_jvp_rule(primals, tangents):
    (x,), (t,) = primals, tangents
    return quantize_jvp(x), jnp.where(jnp.abs(x) <= 1.0, t, 0.0)


def solve(x, g):
    _, vjp = jax.vjp(quantize_jvp, x)
    return {"y": quantize(x), "dx": vjp(g)[0]}
