# A decoy: an identity custom_vjp on both paths (its function returns its argument, its backward
# rule the incoming gradient), with the quantisation and the clipping written outside it. Both
# of its results reach the returned values, but the straight-through estimator is not in it.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def passthrough(v):
    return v


passthrough.defvjp(lambda v: (v, None), lambda _, ct: (ct,))


def solve(x, g):
    y = jnp.where(passthrough(x) >= 0, 1.0, -1.0).astype(x.dtype)
    _, vjp = jax.vjp(passthrough, x)
    dx = jnp.where(jnp.abs(x) <= 1.0, vjp(g)[0], 0.0)
    return {"y": y, "dx": dx}
