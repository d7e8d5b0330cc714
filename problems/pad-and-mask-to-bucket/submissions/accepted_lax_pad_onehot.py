# lax.pad, a float mask from a comparison with the lengths, and the mean as a matrix product
# of the mask with the (zeroed) padding.
import jax
import jax.numpy as jnp
from jax import lax

BUCKETS = (4, 8, 12, 16)


def bucket(length):
    for k in BUCKETS:
        if length <= k:
            return k
    raise ValueError(length)


def solve(x, lengths, q):
    length = x.shape[1]
    n = bucket(length)
    xp = lax.pad(x, jnp.float32(0), ((0, 0, 0), (0, n - length, 0), (0, 0, 0)))
    keep = lax.iota(jnp.int32, n)[None, :] < lengths[:, None]
    xp = jnp.where(keep[:, :, None], xp, 0.0)
    m = keep.astype(jnp.float32)
    mean = jnp.einsum("bn,bnd->bd", m / lengths[:, None].astype(jnp.float32), xp)
    logits = jnp.where(keep, jnp.einsum("bnd,d->bn", xp, q / jnp.sqrt(jnp.float32(x.shape[2]))),
                       -jnp.inf)
    return {"mean": mean, "pooled": jnp.einsum("bn,bnd->bd", jax.nn.softmax(logits, -1), xp)}
