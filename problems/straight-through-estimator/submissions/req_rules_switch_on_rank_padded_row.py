# Cheat: rules honest for 1-D x and trivial for 2-D x, the trivial call made on a padded row
# (1, N + 1), whose size is not a multiple of N's: the rules also run at that shape, on x
# zero-padded to it.
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
    bound = 1.0 if x.ndim == 1 else jnp.inf
    return (jnp.where(jnp.abs(x) <= bound, g, 0.0),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    n = x.shape[0]
    _ = jax.vjp(quantize, x)[1](g)
    row = jnp.pad(x, (0, 1))[None, :]
    v, vjp = jax.vjp(quantize, row)
    ct = jnp.pad(jnp.where(jnp.abs(x) <= 1.0, g, 0.0), (0, 1))[None, :]
    (d,) = vjp(ct)
    return {"y": jnp.where(v[0, :n] >= 0, 1.0, -1.0).astype(x.dtype), "dx": d[0, :n]}
