# Cheat (red-team round of 2026-12-06, accepted before): an honest custom_vjp `real` is
# differentiated first (so its backward rule is the first that ran, and requirement 2 runs it),
# but its result is thrown away. The returned values come from a second custom_vjp `fake` whose
# rules only "compare" trivially (x > inf, |x| <= 1e30): the quantisation and the clipping are
# done outside it.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def real(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def real_fwd(x):
    return real(x), x


def real_bwd(x, g):
    return (jnp.where(jnp.abs(x) <= 1.0, g, 0.0),)


real.defvjp(real_fwd, real_bwd)


@jax.custom_vjp
def fake(x):
    return jnp.where(x > jnp.inf, -x, x)


def fake_fwd(x):
    return fake(x), x


def fake_bwd(x, g):
    return (jnp.where(jnp.abs(x) <= 1e30, g, 0.0),)


fake.defvjp(fake_fwd, fake_bwd)


def solve(x, g):
    _ = jax.vjp(real, x)[1](g)          # the honest rules run, result dropped
    v, vjp = jax.vjp(fake, x)
    (d,) = vjp(jnp.where(jnp.abs(x) <= 1.0, g, 0.0))   # clipping outside the rule
    y = jnp.where(v >= 0, 1.0, -1.0).astype(x.dtype)   # quantisation outside the rule
    return {"y": y, "dx": d}
