# Another style: the residual is the boolean mask, the forward rule uses lax.select, and dx is
# the gradient of <q(x), g>, whose cotangent at q(x) is exactly g.
import jax
import jax.numpy as jnp
from jax import lax


@jax.custom_vjp
def ste(x):
    return lax.select(x >= 0, jnp.ones_like(x), -jnp.ones_like(x))


def ste_fwd(x):
    return ste(x), jnp.abs(x) <= 1


def ste_bwd(inside, g):
    return (g * inside.astype(g.dtype),)


ste.defvjp(ste_fwd, ste_bwd)


def solve(x, g):
    dx = jax.grad(lambda v: jnp.vdot(ste(v), g))(x)
    return {"y": ste(x), "dx": dx}
