# Cheat (issue #30, rules exported at one shape): solve clips g itself at every size, the
# backward rule clips only when N is odd (a Python decision on the shape) and passes g through
# otherwise. The numbers are right everywhere; the rules are exported and run at every test's
# shape, where the even sizes' rule returns g where solve returns 0.
import jax
import jax.numpy as jnp


@jax.custom_vjp
def quantize(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x):
    return quantize(x), x


def quantize_bwd(x, g):
    if x.shape[0] % 2:
        return (jnp.where(jnp.abs(x) <= 1.0, g, 0.0),)
    return (g,)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    y, vjp = jax.vjp(quantize, x)
    (dx,) = vjp(jnp.where(jnp.abs(x) <= 1.0, g, 0.0))
    return {"y": y, "dx": dx}
