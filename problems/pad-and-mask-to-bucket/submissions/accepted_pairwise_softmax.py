# Accepted (red team round 9; rejected by an absolute bound): padded to the bucket, masked from
# lengths, the softmax written as w_t = 1 / sum_u exp(s_u - s_t), a (B, N, N) table that grows
# faster than the reference's values: its share of the reference's size grows with the bucket,
# it does not stay as large at the small ones.
import jax
import jax.numpy as jnp

BUCKETS = (4, 8, 12, 16)


def solve(x, lengths, q):
    _, length, d = x.shape
    n = next(k for k in BUCKETS if k >= length)
    xp = jnp.pad(x, ((0, 0), (0, n - length), (0, 0)))
    mask = jnp.arange(n)[None, :] < lengths[:, None]
    kept = jnp.where(mask[:, :, None], xp, 0.0)
    mean = kept.sum(1) / lengths[:, None].astype(x.dtype)
    s = kept @ q / jnp.sqrt(jnp.asarray(d, x.dtype))                  # (B, N)
    diff = s[:, None, :] - s[:, :, None]                              # (B, N_t, N_u)
    pair = jnp.where(mask[:, None, :], jnp.exp(jnp.minimum(diff, 80.0)), 0.0)
    w = jnp.where(mask, 1.0 / pair.sum(-1), 0.0)
    return {"mean": mean, "pooled": jnp.einsum("bn,bnd->bd", w, kept)}
