# Decoy: the bucket computation runs, but the returned values come from the unpadded input
# (the bucket result only added times zero).
import jax
import jax.numpy as jnp

BUCKETS = (4, 8, 12, 16)


def solve(x, lengths, q):
    length = x.shape[1]
    n = min(b for b in BUCKETS if b >= length)
    xp = jnp.pad(x, ((0, 0), (0, n - length), (0, 0)))
    valid = jnp.arange(n) < lengths[:, None]                       # (B, n)
    xv = jnp.where(valid[..., None], xp, 0.0)
    mean = jnp.einsum("bnd->bd", xv) / lengths[:, None]
    scores = jnp.einsum("bnd,d->bn", xv, q) / jnp.sqrt(float(x.shape[2]))
    weights = jax.nn.softmax(jnp.where(valid, scores, -jnp.inf), axis=-1)
    pooled = jnp.einsum("bn,bnd->bd", weights, xv)
    own = jnp.arange(length) < lengths[:, None]
    xo = jnp.where(own[..., None], x, 0.0)
    s = jnp.where(own, jnp.einsum("bnd,d->bn", xo, q) / jnp.sqrt(float(x.shape[2])), -jnp.inf)
    return {"mean": jnp.einsum("bnd->bd", xo) / lengths[:, None] + 0.0 * mean,
            "pooled": jnp.einsum("bn,bnd->bd", jax.nn.softmax(s, -1), xo) + 0.0 * pooled}
