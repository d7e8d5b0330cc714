# Requirement failed (red team round 9): no bucket pad: each (sequence, feature) column of x is
# broadcast to two rows and padded straight to 16, then row 0 is taken; everything runs over 16
# positions. No value holds 3x the reference's, but at a length of 3 they hold 2x its size and
# at 16 half of it: the sizes do not shrink with the bucket as the reference's do.
import jax
import jax.numpy as jnp


def solve(x, lengths, q):
    b, length, d = x.shape
    m16 = jnp.arange(16)[None, :] < lengths[:, None]                  # (B, 16)
    cols = []
    for i in range(b):
        row = []
        for j in range(d):
            c = jnp.broadcast_to(x[i, :, j][None, :], (2, length))
            c = jnp.pad(c, ((0, 0), (0, 16 - length)))[0]             # (16,)
            row.append(jnp.where(m16[i], c, 0.0))
        cols.append(row)
    means, pooled = [], []
    for i in range(b):
        s = sum(cols[i][j] * q[j] for j in range(d)) / jnp.sqrt(jnp.asarray(d, x.dtype))
        w = jax.nn.softmax(jnp.where(m16[i], s, -jnp.inf))
        means.append(jnp.stack([cols[i][j].sum() for j in range(d)]) / lengths[i].astype(x.dtype))
        pooled.append(jnp.stack([(w * cols[i][j]).sum() for j in range(d)]))
    return {"mean": jnp.stack(means), "pooled": jnp.stack(pooled)}
