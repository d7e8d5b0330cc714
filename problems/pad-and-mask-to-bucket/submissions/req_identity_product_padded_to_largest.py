# Red-team round 6 of 2026-12-06 (a known limit, accepted until 2026-12-07): x padded to its
# bucket, multiplied by an identity matrix, then padded to 16. The product keeps the padded
# shape, so its result keeps the extent of the bucket pad, and the pad to 16 is too long.
import jax
import jax.numpy as jnp

BUCKETS = (4, 8, 12, 16)


def solve(x, lengths, q):
    _, length, d = x.shape
    n = next(b for b in BUCKETS if b >= length)
    xp = jnp.pad(x, ((0, 0), (0, n - length), (0, 0)))
    same = jnp.einsum("bnd,de->bne", xp, jnp.eye(d, dtype=x.dtype),
                      precision=jax.lax.Precision.HIGHEST)
    xq = jnp.pad(same, ((0, 0), (0, 16 - n), (0, 0)))
    mask = jnp.arange(16)[None, :] < lengths[:, None]
    kept = jnp.where(mask[:, :, None], xq, 0)
    mean = kept.sum(axis=1) / lengths[:, None].astype(x.dtype)
    scores = jnp.where(mask, kept @ q / jnp.sqrt(jnp.asarray(d, x.dtype)), -jnp.inf)
    weights = jax.nn.softmax(scores, axis=1)
    return {"mean": mean, "pooled": jnp.einsum("bn,bnd->bd", weights, kept)}
