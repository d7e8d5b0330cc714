# Cheat: as req_two_pass_softmax_junk_slot.py (a two-pass softmax: the blocks' maxima stacked
# by a first scan, no running maximum or rescaling in the second), but the first scan's filler
# reaches the output times 1e-7: it moves the output's last bits and stays within the
# tolerance. Setting it back at the loop's end moves the output by under 1e-3 of its size.
import jax
import jax.numpy as jnp

BLOCK = 4


def solve(q, k, v):
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
    return {"out": acc / l[:, None] + 1e-7 * junk}
