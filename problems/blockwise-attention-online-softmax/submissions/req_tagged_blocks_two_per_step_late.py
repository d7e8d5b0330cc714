# Cheat (red-team round of 2026-12-05, issue #30): each step's block tagged into the state, idle steps then two blocks per step: the idle steps execute almost nothing.
# Cheat: steps 0..nb/2-1 fold no block, steps nb/2..nb-1 fold two blocks each (inner loop with a
# data-zero count). Each carried array (m, l, acc) has an extra tag entry that adds block j's sum
# at step j, so every block first moves every carried value at its own step.
import jax
import jax.numpy as jnp

BLOCK = 4


def solve(q, k, v):
    t, d = q.shape
    nb = t // BLOCK
    qs = q / jnp.sqrt(jnp.float32(d))
    zero = (jnp.abs(v).sum() * 0.0).astype(jnp.int32)

    def fold(i, carry):
        M, L, A = carry
        m, l, acc = M[:t], L[:t], A[:t]
        kj = jax.lax.dynamic_slice_in_dim(k, i * BLOCK, BLOCK)
        vj = jax.lax.dynamic_slice_in_dim(v, i * BLOCK, BLOCK)
        s = qs @ kj.T
        m_new = jnp.maximum(m, s.max(axis=1))
        alpha = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new[:, None])
        return (M.at[:t].set(m_new), L.at[:t].set(alpha * l + p.sum(axis=1)),
                A.at[:t].set(alpha[:, None] * acc + p @ vj))

    def body(j, carry):
        base = 2 * (j - nb // 2)
        n = jnp.where(j >= nb // 2, jnp.minimum(2, nb - base), 0) + zero
        M, L, A = jax.lax.fori_loop(base, base + n, fold, carry)
        kj = jax.lax.dynamic_slice_in_dim(k, j * BLOCK, BLOCK)
        vj = jax.lax.dynamic_slice_in_dim(v, j * BLOCK, BLOCK)
        tag = jnp.sum(kj) + jnp.sum(vj)
        return M.at[t].add(tag), L.at[t].add(tag), A.at[t].add(tag)

    M0 = jnp.full((t + 1,), -jnp.inf, jnp.float32).at[t].set(0.0)
    _, L, A = jax.lax.fori_loop(0, nb, body, (M0, jnp.zeros((t + 1,)), jnp.zeros((t + 1, d))))
    return {"out": A[:t] / L[:t, None]}
