"""Trusted reference for "Pad and Mask to a Bucket".

The batch (B, L, D) is padded along L to the smallest bucket length n >= L (a Python decision
on the static shape: one program per bucket), and everything after that runs on the padded
(B, n, D) array with a mask built from the `lengths` array, never from L: positions at or
beyond lengths[b] (the batch's own padding, which holds arbitrary values, and the bucket
padding) are removed with `jnp.where`, so no value there, however large, reaches the result.
"""

import jax
import jax.numpy as jnp

BUCKETS = (4, 8, 12, 16)


def bucket_length(length: int) -> int:
    return next(b for b in BUCKETS if b >= length)


def solve(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    _, length, d = x.shape
    n = bucket_length(length)
    xp = jnp.pad(x, ((0, 0), (0, n - length), (0, 0)))
    mask = jnp.arange(n)[None, :] < lengths[:, None]                  # (B, n)
    kept = jnp.where(mask[:, :, None], xp, 0)                         # (B, n, D)
    mean = kept.sum(axis=1) / lengths[:, None].astype(x.dtype)
    scores = jnp.where(mask, kept @ q / jnp.sqrt(jnp.asarray(d, x.dtype)), -jnp.inf)
    weights = jax.nn.softmax(scores, axis=1)
    return {"mean": mean, "pooled": jnp.einsum("bn,bnd->bd", weights, kept)}
