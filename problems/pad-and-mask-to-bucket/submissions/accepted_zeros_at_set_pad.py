# Honest form (issue 41): padding by .at[...].set into a zero buffer of the bucket length,
# jnp.zeros((B, N, D)).at[:, :L].set(x), written straight in solve (no jitted core), instead
# of jnp.pad; then the usual mask from `lengths` and jnp.where.
import jax
import jax.numpy as jnp

BUCKETS = (4, 8, 12, 16)


def solve(x, lengths, q):
    b, length, d = x.shape
    n = min(k for k in BUCKETS if k >= length)
    xp = jnp.zeros((b, n, d), dtype=x.dtype).at[:, :length].set(x)
    valid = jnp.arange(n)[None, :] < lengths[:, None]          # (B, N)
    xp = jnp.where(valid[..., None], xp, 0.0)
    mean = xp.sum(axis=1) / lengths[:, None].astype(jnp.float32)
    scores = (xp @ q) / jnp.sqrt(jnp.float32(d))
    scores = jnp.where(valid, scores, -jnp.inf)
    w = jax.nn.softmax(scores, axis=1)
    pooled = (w[..., None] * xp).sum(axis=1)
    return {"mean": mean, "pooled": pooled}
