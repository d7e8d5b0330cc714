# Red team round 8 (2026-12-07; accepted until now): a fori_loop copies x's rows into a buffer
# of 16, the largest bucket, folded to (B, 4, 4, D) and computed on: no axis as long as the
# next bucket, no pad op. The largest value computed from x holds 4x the reference's elements
# at a length of 4.
import jax
import jax.numpy as jnp


def solve(x, lengths, q):
    b, length, d = x.shape

    def copy_row(t, buf):
        row = jax.lax.dynamic_slice_in_dim(x, t, 1, axis=1)
        return jax.lax.dynamic_update_slice_in_dim(buf, row, t, axis=1)

    xp = jax.lax.fori_loop(0, length, copy_row, jnp.zeros((b, 16, d), x.dtype))
    xp = xp.reshape(b, 4, 4, d)
    pos = jnp.arange(16).reshape(4, 4)
    mask = pos[None] < lengths[:, None, None]
    kept = jnp.where(mask[..., None], xp, 0.0)
    mean = kept.sum(axis=(1, 2)) / lengths[:, None].astype(x.dtype)
    s = jnp.where(mask, (kept * q).sum(-1) / jnp.sqrt(jnp.float32(d)), -jnp.inf)
    w = jnp.exp(s - s.max(axis=(1, 2), keepdims=True))
    w = w / w.sum(axis=(1, 2), keepdims=True)
    pooled = (w[..., None] * kept).sum(axis=(1, 2))
    return {"mean": mean, "pooled": pooled}
