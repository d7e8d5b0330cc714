# Honest, unusual (a former known limit, rejected until 2026-12-06): a fori_loop over the T // 4
# key blocks that, written for a T that may not be a multiple of 4, masks keys past T (as
# accepted_fori_masked_tail.py) AND keeps the state when a block has no valid key:
# jnp.where(jnp.any(inside), new, state). The guard is true at every step; it is computed from
# an array of key indices, which the grader now runs step by step like the counter itself.
import jax
import jax.numpy as jnp

BLOCK = 4


def solve(q, k, v):
    t, d = q.shape
    qs = q / jnp.sqrt(jnp.float32(d))

    def body(j, state):
        m, l, acc = state
        kj = jax.lax.dynamic_slice_in_dim(k, j * BLOCK, BLOCK)
        vj = jax.lax.dynamic_slice_in_dim(v, j * BLOCK, BLOCK)
        inside = j * BLOCK + jnp.arange(BLOCK) < t
        s = jnp.where(inside[None, :], qs @ kj.T, -jnp.inf)
        m_new = jnp.maximum(m, s.max(axis=1))
        a = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new[:, None])
        new = (m_new, a * l + p.sum(axis=1), a[:, None] * acc + p @ vj)
        return tuple(jnp.where(jnp.any(inside), n, o) for n, o in zip(new, state))

    init = (jnp.full((t,), -jnp.inf, jnp.float32), jnp.zeros((t,)), jnp.zeros((t, d)))
    _, l, acc = jax.lax.fori_loop(0, t // BLOCK, body, init)
    return {"out": acc / l[:, None]}
