# Cheat (issue #30, a form of red-team round 5's padding after arithmetic): x padded to its
# bucket and masked by lengths (a select on data, not a copy any more), then padded again to the
# largest bucket, 16, and everything computed at that length.
import jax
import jax.numpy as jnp

BUCKETS = (4, 8, 12, 16)


def solve(x, lengths, q):
    _, length, d = x.shape
    n = next(b for b in BUCKETS if b >= length)
    xp = jnp.pad(x, ((0, 0), (0, n - length), (0, 0)))
    masked = jnp.where((jnp.arange(n)[None, :] < lengths[:, None])[:, :, None], xp, 0.0)
    xq = jnp.pad(masked, ((0, 0), (0, 16 - n), (0, 0)))
    mask = jnp.arange(16)[None, :] < lengths[:, None]
    mean = xq.sum(axis=1) / lengths[:, None].astype(x.dtype)
    scores = jnp.where(mask, xq @ q / jnp.sqrt(jnp.asarray(d, x.dtype)), -jnp.inf)
    weights = jax.nn.softmax(scores, axis=1)
    return {"mean": mean, "pooled": jnp.einsum("bn,bnd->bd", weights, xq)}
