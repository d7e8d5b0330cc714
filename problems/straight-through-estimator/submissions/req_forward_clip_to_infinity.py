# Issue #30, "identities in disguise" (SHOULD be requirement_failed). The custom_vjp's function
# is clip(x, -inf, inf): a new value, so not an identity wrapper by object, but it quantises
# nothing; the sign is taken around it, on its result. The rule now asks
# that the function itself quantise (a sign or comparison of its argument).
import jax
import jax.numpy as jnp


@jax.custom_vjp
def passthrough(x):
    return jnp.clip(x, -jnp.inf, jnp.inf)


def passthrough_fwd(x):
    return passthrough(x), x


def passthrough_bwd(x, g):
    return (jnp.where(jnp.abs(x) <= 1.0, g, 0.0),)


passthrough.defvjp(passthrough_fwd, passthrough_bwd)


def solve(x, g):
    p, vjp = jax.vjp(passthrough, x)
    (dx,) = vjp(g)
    return {"y": jnp.where(p >= 0, 1.0, -1.0).astype(x.dtype), "dx": dx}
