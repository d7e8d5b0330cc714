# Cheat (red-team rounds of 2026-12-06, issue #30; a known limit until 2026-12-06): rules that
# decide in Python on x.ndim, honest for 1-D x and trivial for 2-D x; solve differentiates the
# 1-D call and drops it, and returns the 2-D call's values with the work done outside. The rules
# run also runs them at every other shape the function was called at.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x):
    if x.ndim == 1:
        return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)
    return jnp.where(x >= -jnp.inf, x, -x)


def quantize_fwd(x):
    return quantize(x), x


def quantize_bwd(x, g):
    bound = 1.0 if x.ndim == 1 else 1e30
    return (jnp.where(jnp.abs(x) <= bound, g, 0.0),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    _ = jax.vjp(quantize, x)[1](g)
    v, vjp = jax.vjp(quantize, x[None, :])
    (d,) = vjp(jnp.where(jnp.abs(x) <= 1.0, g, 0.0)[None, :])
    return {"y": jnp.where(v[0] >= 0, 1.0, -1.0).astype(x.dtype), "dx": d[0]}
