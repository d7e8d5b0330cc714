# A decoy: an identity custom_vjp wrapped around a value computed directly, and the gradient
# written as a formula. The wrapper's result is returned, but its backward rule (the identity)
# never produces the returned gradient: the straight-through estimator is not in it.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def passthrough(v):
    return v


passthrough.defvjp(lambda v: (v, None), lambda _, g: (g,))


def solve(x, g):
    y = passthrough(jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype))
    dx = jnp.where(jnp.abs(x) <= 1.0, g, 0.0)
    return {"y": y, "dx": dx}
