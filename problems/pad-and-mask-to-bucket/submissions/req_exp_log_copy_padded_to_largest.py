# Cheat (issue #30, a form of red-team round 5's padding after arithmetic): x padded to its
# bucket, taken through exp and log (elementwise: the same values, up to rounding), then padded
# to the largest bucket, 16, and everything computed at that length.
import jax
import jax.numpy as jnp

BUCKETS = (4, 8, 12, 16)


def solve(x, lengths, q):
    _, length, d = x.shape
    n = next(b for b in BUCKETS if b >= length)
    xp = jnp.pad(x, ((0, 0), (0, n - length), (0, 0)))
    shifted = jnp.log(jnp.exp(xp - 8.0)) + 8.0
    xq = jnp.pad(shifted, ((0, 0), (0, 16 - n), (0, 0)))
    mask = jnp.arange(16)[None, :] < lengths[:, None]
    kept = jnp.where(mask[:, :, None], xq, 0)
    mean = kept.sum(axis=1) / lengths[:, None].astype(x.dtype)
    scores = jnp.where(mask, kept @ q / jnp.sqrt(jnp.asarray(d, x.dtype)), -jnp.inf)
    weights = jax.nn.softmax(scores, axis=1)
    return {"mean": mean, "pooled": jnp.einsum("bn,bnd->bd", weights, kept)}
