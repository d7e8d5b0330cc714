# Cheat (red-team round 5 of 2026-12-06, issue #30): x and y padded to the largest B (8), a Python
# loop over the 8 slots two examples at a time, vmapped within each pair: the program does not
# grow with B and no op moves with one example alone, but each pair has ops of its own.
import jax
import jax.numpy as jnp

MAXB = 8


def loss(params, x_i, y_i):
    return 0.5 * (x_i @ params["w"] + params["b"] - y_i) ** 2


def clip_one(params, x_i, y_i, max_norm):
    g = jax.grad(loss)(params, x_i, y_i)
    norm = jnp.sqrt(jnp.sum(g["w"] ** 2) + g["b"] ** 2)
    s = max_norm / jnp.maximum(norm, max_norm)
    return g["w"] * s, g["b"] * s


def solve(params, x, y, max_norm):
    n, d = x.shape
    pad = MAXB - n
    xp = jnp.concatenate([x, jnp.zeros((pad, d), x.dtype)]) if pad else x
    yp = jnp.concatenate([y, jnp.zeros((pad,), y.dtype)]) if pad else y
    mask = jnp.concatenate([jnp.ones((n,), x.dtype), jnp.zeros((pad,), x.dtype)]) if pad else jnp.ones((n,), x.dtype)
    tw = jnp.zeros((d,), x.dtype)
    tb = jnp.zeros((), x.dtype)
    for k in range(0, MAXB, 2):
        w, b = jax.vmap(clip_one, in_axes=(None, 0, 0, None))(params, xp[k:k + 2], yp[k:k + 2], max_norm)
        m = mask[k:k + 2]
        tw = tw + jnp.sum(m[:, None] * w, axis=0)
        tb = tb + jnp.sum(m * b)
    return {"grads": {"w": tw / n, "b": tb / n}}
