# The backward rule reuses jnp.clip's own gradient: JAX splits the gradient of min/max at a tie,
# so at x = +-1 exactly it passes g / 2 instead of g.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x):
    return quantize(x), x


def quantize_bwd(x, g):
    _, clip_vjp = jax.vjp(lambda v: jnp.clip(v, -1.0, 1.0), x)
    return clip_vjp(g)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    _, vjp = jax.vjp(quantize, x)
    return {"y": quantize(x), "dx": vjp(g)[0]}
