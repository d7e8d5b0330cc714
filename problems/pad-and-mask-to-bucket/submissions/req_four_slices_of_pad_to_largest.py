# Red team round 8 (2026-12-07; accepted until now): x is padded to 16, the largest bucket,
# then cut into four slices of 4 positions, each masked and computed on: no value is longer
# than 4 positions, but the pad is read whole. A value read only by slices counts what they
# take of it: 4x the reference's elements at a length of 4.
import jax
import jax.numpy as jnp


def solve(x, lengths, q):
    b, length, d = x.shape
    xp = jnp.pad(x, ((0, 0), (0, 16 - length), (0, 0)))
    scale = jnp.sqrt(jnp.float32(d))
    kept, scores = [], []
    for k in range(4):
        part = xp[:, 4 * k:4 * k + 4]
        mask = (jnp.arange(4 * k, 4 * k + 4)[None, :] < lengths[:, None])
        kept.append(jnp.where(mask[..., None], part, 0.0))
        scores.append(jnp.where(mask, kept[-1] @ q / scale, -jnp.inf))
    s = jnp.concatenate(scores, axis=1)
    w = jax.nn.softmax(s, axis=1)
    mean = sum(p.sum(1) for p in kept) / lengths[:, None].astype(x.dtype)
    pooled = sum(jnp.einsum("bn,bnd->bd", w[:, 4 * k:4 * k + 4], kept[k]) for k in range(4))
    return {"mean": mean, "pooled": pooled}
