# Cheat (red-team round 2 of 2026-12-06, accepted before): an honest custom_vjp differentiated
# first, its results kept only under jnp.where(x != x, ...), false for finite x but not a
# constant, beside a second custom_vjp that clips nothing and gives the returned values. Two
# custom_vjp functions whose backward rules ran are now refused by the rules run.
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
    ry, rvjp = jax.vjp(real, x)
    (rd,) = rvjp(g)
    v, vjp = jax.vjp(fake, x)
    (d,) = vjp(jnp.where(jnp.abs(x) <= 1.0, g, 0.0))
    y = jnp.where(v >= 0, 1.0, -1.0).astype(x.dtype)
    never = x != x
    return {"y": jnp.where(never, ry, y), "dx": jnp.where(never, rd, d)}
