# Honest: one jax.grad with has_aux returns both: the gradient of <quantize(v), g> and, as
# the auxiliary value, quantize(v) itself.
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


def solve(x, g):
    dx, y = jax.grad(lambda v: (jnp.vdot(quantize(v), g), quantize(v)), has_aux=True)(x)
    return {"y": y, "dx": dx}
