# Cheat (red-team round 6 of 2026-12-06, issue #30): rules that decide in Python on the DTYPE, not the shape: honest for float32 x, trivial
# for complex64 x (a comparison that is always true). solve calls the quantiser only at complex64
# (x converted exactly), takes the sign outside, and clips g before handing it to the vjp. The
# rules run replays them at x's float32 dtype, where they are honest.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x):
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        return jnp.where(jnp.real(x) >= -jnp.inf, x, 0)
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x):
    return quantize(x), x


def quantize_bwd(x, g):
    bound = 1e38 * 1e1 if jnp.issubdtype(x.dtype, jnp.complexfloating) else 1.0
    return (jnp.where(jnp.abs(x) <= bound, g, 0).astype(g.dtype),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    xc = x.astype(jnp.complex64)
    v, vjp = jax.vjp(quantize, xc)
    (d,) = vjp(jnp.where(jnp.abs(x) <= 1.0, g, 0.0).astype(jnp.complex64))
    return {"y": jnp.where(jnp.real(v) >= 0, 1.0, -1.0).astype(x.dtype),
            "dx": jnp.real(d).astype(x.dtype)}
