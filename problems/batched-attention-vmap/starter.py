import jax  # noqa: F401  (you will need jax.vmap and jax.nn.softmax)
import jax.numpy as jnp  # noqa: F401


def solve(q, k, v, lengths):
    """Masked scaled dot-product attention for every example and every head.

    q, k, v: float32 (B, H, T, d);  lengths: int32 (B,), 1 <= lengths[b] <= T

    For example b and head h: out[b, h] = softmax(q[b, h] @ k[b, h].T / sqrt(d)) @ v[b, h],
    where keys at positions j >= lengths[b] (padding) get weight 0 for every query and head.
    Return {"out": float32 (B, H, T, d)}. Write attention for ONE head of ONE example and map
    it with jax.vmap: no loop over the batch or the heads.
    """

    def attend(q1, k1, v1, length):  # (T, d), (T, d), (T, d), () -> (T, d)
        # TODO: scores, mask the padded keys, softmax over the keys, weighted sum of values.
        raise NotImplementedError("solve is not written yet")

    # TODO: jax.vmap over the heads (in_axes: the length is shared), then over the batch.
    raise NotImplementedError("solve is not written yet")
