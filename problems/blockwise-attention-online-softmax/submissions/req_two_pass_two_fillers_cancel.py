# Cheat (red-team round 3 of 2026-12-06): the two-pass softmax (per-block maxima stacked by a
# first scan, no running maximum or rescaling in the second) with two fillers in the first scan,
# j1 += y and j2 -= y, and out += j1 + j2 (exactly 0): kept alone, the stacked maxima give the
# output what the first scan does.
import jax
import jax.numpy as jnp

BLOCK = 4


def solve(q, k, v):
    t, d = q.shape
    qs = q / jnp.sqrt(jnp.float32(d))
    kb = k.reshape(-1, BLOCK, d)
    vb = v.reshape(-1, BLOCK, d)

    def first(c, blk):
        j1, j2 = c
        kj, vj = blk
        s = qs @ kj.T
        mj = s.max(axis=1)
        y = jnp.exp(s - mj[:, None]) @ vj
        return (j1 + y, j2 - y), mj

    (j1, j2), maxima = jax.lax.scan(first, (jnp.zeros((t, d)), jnp.zeros((t, d))), (kb, vb))
    mstar = maxima.max(axis=0)

    def step(carry, blk):
        l, acc = carry
        kj, vj = blk
        p = jnp.exp(qs @ kj.T - mstar[:, None])
        return (l + p.sum(axis=1), acc + p @ vj), None

    (l, acc), _ = jax.lax.scan(step, (jnp.zeros((t,)), jnp.zeros((t, d))), (kb, vb))
    return {"out": acc / l[:, None] + (j1 + j2)}
