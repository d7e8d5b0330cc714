# Both outputs from one jax.vjp call, and the forward rule computes the value itself instead of
# calling `quantize`: the custom_vjp function is only ever called through the differentiation
# transform, so the traced jaxpr holds the forward and backward rules' operations but no
# custom_vjp_call equation. An honest solution all the same: stage A has to record the custom_vjp
# call on this path for it to be accepted.
import jax
import jax.numpy as jnp


def _sign(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


@jax.custom_vjp
def quantize(x):
    return _sign(x)


def quantize_fwd(x):
    return _sign(x), x


def quantize_bwd(x, g):
    return (jnp.where(jnp.abs(x) <= 1.0, g, jnp.zeros_like(g)),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    y, vjp = jax.vjp(quantize, x)
    (dx,) = vjp(g)
    return {"y": y, "dx": dx}
