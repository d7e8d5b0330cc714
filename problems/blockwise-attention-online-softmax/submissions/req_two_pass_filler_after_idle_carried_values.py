# Cheat (red-team round 3 of 2026-12-06): a two-pass softmax whose first scan carries four idle
# values before its filler and stacks per-block statistics; knockout parts go to the values that
# moved most, so the filler is a part of its own, not one with what the output needs.
import jax
import jax.numpy as jnp

BLOCK = 4


def solve(q, k, v):
    t, d = q.shape
    qs = q / jnp.sqrt(jnp.float32(d))
    kb = k.reshape(-1, BLOCK, d)
    vb = v.reshape(-1, BLOCK, d)

    def first(c, blk):
        d1, d2, d3, d4, junk = c
        kj, vj = blk
        s = qs @ kj.T
        mj = s.max(axis=1)
        p = jnp.exp(s - mj[:, None])
        return (d1 + 1.0, d2 * 0.5, d3 - 1.0, d4 + 2.0, junk + p @ vj), (mj, p.sum(axis=1))

    z = jnp.zeros(())
    (d1, d2, d3, d4, junk), (maxima, sums) = jax.lax.scan(
        first, (z, z + 1.0, z, z, jnp.zeros((t, d))), (kb, vb))
    mstar = maxima.max(axis=0)
    l = (sums * jnp.exp(maxima - mstar[None, :])).sum(axis=0)

    def step(acc, blk):
        kj, vj = blk
        p = jnp.exp(qs @ kj.T - mstar[:, None])
        return acc + p @ vj, None

    acc, _ = jax.lax.scan(step, jnp.zeros((t, d)), (kb, vb))
    return {"out": acc / l[:, None] + 1e-30 * junk + 1e-30 * (d1 + d2 + d3 + d4)}
