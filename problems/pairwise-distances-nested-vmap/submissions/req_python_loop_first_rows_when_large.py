# Issue #30, "shapes the probes never see": the first four points of x get a row each in a
# Python loop when N is at least 9; the rest (and every smaller N) one nested vmap.
import jax
import jax.numpy as jnp


def pair(a, b):
    return jnp.maximum(jnp.dot(a, a) + jnp.dot(b, b) - 2 * jnp.dot(a, b), 0)


def solve(x, y):
    rows = jax.vmap(jax.vmap(pair, (None, 0)), (0, None))
    if x.shape[0] >= 9:
        head = jnp.stack([jax.vmap(pair, (None, 0))(x[i], y) for i in range(4)])
        d2 = jnp.concatenate([head, rows(x[4:], y)])
    else:
        d2 = rows(x, y)
    return {"d2": d2, "d": jnp.sqrt(d2)}
