# Cheat (red-team round 4 of 2026-12-06): block j is copied into a 3-block buffer at step j
# and the online softmax folds three blocks at every third step, chosen by a counter-indexed
# gather; every step computes the same three updates.
import jax
import jax.numpy as jnp

BLOCK = 4


def solve(q, k, v):
    t, d = q.shape
    nb = t // BLOCK
    qs = q / jnp.sqrt(jnp.float32(d))

    def fold(c, kj, vj):
        m, l, acc = c
        s = qs @ kj.T
        m_new = jnp.maximum(m, s.max(axis=1))
        a = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new[:, None])
        return m_new, a * l + p.sum(axis=1), a[:, None] * acc + p @ vj

    def body(j, carry):
        m, l, acc, kb, vb = carry
        r = j % 3
        kb = kb.at[r].set(jax.lax.dynamic_slice_in_dim(k, j * BLOCK, BLOCK))
        vb = vb.at[r].set(jax.lax.dynamic_slice_in_dim(v, j * BLOCK, BLOCK))
        go = ((r == 2) | (j == nb - 1)).astype(jnp.int32)
        c = (m, l, acc)
        for i in range(3):
            take = go * (i <= r).astype(jnp.int32)
            n = fold(c, kb[i], vb[i])
            c = tuple(jnp.stack([a, b])[take] for a, b in zip(c, n))
        return (*c, kb, vb)

    m0 = jnp.full((t,), -jnp.inf, jnp.float32)
    init = (m0, jnp.zeros((t,)), jnp.zeros((t, d)), jnp.zeros((3, BLOCK, d)), jnp.zeros((3, BLOCK, d)))
    _, l, acc, _, _ = jax.lax.fori_loop(0, nb, body, init)
    return {"out": acc / l[:, None]}
