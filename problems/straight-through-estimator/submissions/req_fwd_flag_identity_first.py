# Cheat (issue #30, a second form of the stateful rule): the forward rule returns x unchanged the
# first time it runs after solve starts (solve quantises outside it), and quantises on every
# later call, which is when stage A used to trace the rules program on its own. The rules
# program replays what solve's trace recorded, so its forward value is x, not q(x).
import jax
import jax.numpy as jnp

_first = [True]


@jax.custom_vjp
def quantize(x):
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def quantize_fwd(x):
    if _first[0]:
        _first[0] = False
        return x, x
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype), x


def quantize_bwd(x, g):
    return (jnp.where(jnp.abs(x) <= 1.0, g, 0.0),)


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    _first[0] = True
    y, vjp = jax.vjp(quantize, x)
    (dx,) = vjp(g)
    return {"y": jnp.where(y >= 0, 1.0, -1.0).astype(x.dtype), "dx": dx}
