# Honest (red-team round of 2026-12-06, rejected before): hint 3's alternative, the running
# maximum started at the first block's maximum score computed before the loop, l = 0 and a = 0,
# then a scan over all T/4 blocks, block 0 included.
import jax
import jax.numpy as jnp

BLOCK = 4


def solve(q, k, v):
    t, d = q.shape
    nb = t // BLOCK
    qs = q / jnp.sqrt(jnp.float32(d))
    kb = k.reshape(nb, BLOCK, d)
    vb = v.reshape(nb, BLOCK, d)
    m0 = (qs @ kb[0].T).max(axis=1)

    def step(c, kv):
        m, l, acc = c
        kj, vj = kv
        s = qs @ kj.T
        m_new = jnp.maximum(m, s.max(axis=1))
        scale = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new[:, None])
        return (m_new, scale * l + p.sum(axis=1), scale[:, None] * acc + p @ vj), None

    (m, l, acc), _ = jax.lax.scan(step, (m0, jnp.zeros((t,)), jnp.zeros((t, d))), (kb, vb))
    return {"out": acc / l[:, None]}
