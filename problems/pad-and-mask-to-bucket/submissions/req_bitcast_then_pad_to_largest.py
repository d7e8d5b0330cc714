# Red team round 7 (2026-12-07; accepted until then): padded to the bucket, bitcast to int32
# and back, then padded to 16. A bitcast keeps the shape, so the value keeps its extent.
import jax
import jax.numpy as jnp

BUCKETS = (4, 8, 12, 16)


def solve(x, lengths, q):
    _, length, d = x.shape
    n = next(v for v in BUCKETS if v >= length)
    xp = jnp.pad(x, ((0, 0), (0, n - length), (0, 0)))
    bits = jax.lax.bitcast_convert_type(xp, jnp.int32)
    xp = jnp.pad(jax.lax.bitcast_convert_type(bits, jnp.float32), ((0, 0), (0, 16 - n), (0, 0)))
    mask = jnp.arange(16)[None, :] < lengths[:, None]
    kept = jnp.where(mask[..., None], xp, 0.0)
    mean = kept.sum(1) / lengths[:, None].astype(x.dtype)
    s = jnp.where(mask, kept @ q / jnp.sqrt(jnp.float32(d)), -jnp.inf)
    pooled = jnp.einsum("bn,bnd->bd", jax.nn.softmax(s, axis=1), kept)
    return {"mean": mean, "pooled": pooled}
