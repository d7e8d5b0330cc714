# A custom_vjp, but the plain (unclipped) straight-through estimator: g passes everywhere,
# also where |x| > 1.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


quantize.defvjp(lambda x: (quantize(x), None), lambda _, g: (g,))


def solve(x, g):
    _, vjp = jax.vjp(quantize, x)
    return {"y": quantize(x), "dx": vjp(g)[0]}
