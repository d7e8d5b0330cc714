# Cheat (red-team round 3 of 2026-12-06): the two-pass softmax with a filler slot, used only at
# T = 16. There the output moves with a block in 16d values, which the allowance for direct
# copies of k's and v's shares together (16d) covered; a direct copy is of one input's share.
import jax
import jax.numpy as jnp

BLOCK = 4


def honest(q, k, v):
    t, d = q.shape
    qs = q / jnp.sqrt(jnp.float32(d))

    def step(c, blk):
        m, l, o = c
        kj, vj = blk
        s = qs @ kj.T
        m2 = jnp.maximum(m, s.max(axis=1))
        p = jnp.exp(s - m2[:, None])
        r = jnp.exp(m - m2)
        return (m2, l * r + p.sum(axis=1), o * r[:, None] + p @ vj), None

    init = (jnp.full((t,), -jnp.inf), jnp.zeros((t,)), jnp.zeros((t, d)))
    (m, l, o), _ = jax.lax.scan(step, init, (k.reshape(-1, 4, d), v.reshape(-1, 4, d)))
    return o / l[:, None]


def cheat(q, k, v):
    t, d = q.shape
    qs = q / jnp.sqrt(jnp.float32(d))
    kb = k.reshape(-1, BLOCK, d)
    vb = v.reshape(-1, BLOCK, d)

    def first(junk, blk):
        kj, vj = blk
        s = qs @ kj.T
        mj = s.max(axis=1)
        return junk + jnp.exp(s - mj[:, None]) @ vj, mj

    junk, maxima = jax.lax.scan(first, jnp.zeros((t, d)), (kb, vb))
    mstar = maxima.max(axis=0)

    def step(carry, blk):
        l, acc = carry
        kj, vj = blk
        p = jnp.exp(qs @ kj.T - mstar[:, None])
        return (l + p.sum(axis=1), acc + p @ vj), None

    (l, acc), _ = jax.lax.scan(step, (jnp.zeros((t,)), jnp.zeros((t, d))), (kb, vb))
    return acc / l[:, None] + 1e-30 * junk


def solve(q, k, v):
    if q.shape[0] == 16:
        return {"out": cheat(q, k, v)}
    return {"out": honest(q, k, v)}
