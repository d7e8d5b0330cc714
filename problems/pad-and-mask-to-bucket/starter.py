import jax  # noqa: F401
import jax.numpy as jnp  # noqa: F401

BUCKETS = (4, 8, 12, 16)


def solve(x, lengths, q):
    """Masked mean and attention pooling of a padded batch, padded to a bucket length.

    x:       float32 (B, L, D): B sequences, padded to the longest one (L); x[b, t] for
             t >= lengths[b] is padding and may hold ANY finite value
    lengths: int32 (B,), 1 <= lengths[b] <= L
    q:       float32 (D,), the pooling query

    Pad x along L to n = the smallest length in BUCKETS that is >= L, then, over the valid
    positions t < lengths[b] only:
      mean[b]   = the average of x[b, t]
      pooled[b] = sum_t softmax_t(x[b, t] @ q / sqrt(D)) * x[b, t]
    Return {"mean": float32 (B, D), "pooled": float32 (B, D)}. Build the mask from `lengths`,
    never from L, so that every L of one bucket gives the same program.
    """
    # TODO: n = the bucket of x.shape[1]; pad x to (B, n, D) (jnp.pad).
    # TODO: mask = positions < lengths[:, None]; remove the padding with jnp.where.
    # TODO: the masked mean, and the softmax over the valid positions only.
    raise NotImplementedError("solve is not written yet")
