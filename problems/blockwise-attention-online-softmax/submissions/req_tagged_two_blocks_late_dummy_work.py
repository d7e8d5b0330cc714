# Cheat (red-team round of 2026-12-06, issue #30): a tag beside the state makes every step 'keep'
# what it reads; the steps whose reads move none of the outputs are idle now.
# Cheat (target 3): every shape: steps 0..nb/2-1 fold no block, later steps fold two blocks
# each; each step's block is tagged into the state (every block first moves the state at its
# own step), and the idle steps fold two blocks' worth of dummy arithmetic on a junk carry,
# so no step executes under half the median nor over 3x.
import jax
import jax.numpy as jnp

BLOCK = 4


def solve(q, k, v):
    t, d = q.shape
    nb = t // BLOCK
    qs = q / jnp.sqrt(jnp.float32(d))
    zero = (jnp.abs(v).sum() * 0.0).astype(jnp.int32)

    def fold1(i, carry):
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
        M, L, A, JM, JL, JA = carry
        late = j >= nb // 2
        base = 2 * (j - nb // 2)
        n = jnp.where(late, jnp.minimum(2, nb - base), 0) + zero
        M, L, A = jax.lax.fori_loop(base, base + n, fold1, (M, L, A))
        nj = jnp.where(late, 0, 2) + zero
        JM, JL, JA = jax.lax.fori_loop(0, nj, fold1, (JM, JL, JA))
        kj = jax.lax.dynamic_slice_in_dim(k, j * BLOCK, BLOCK)
        vj = jax.lax.dynamic_slice_in_dim(v, j * BLOCK, BLOCK)
        tag = jnp.sum(kj) + jnp.sum(vj)
        return M.at[t].add(tag), L.at[t].add(tag), A.at[t].add(tag), JM, JL, JA

    M0 = jnp.full((t + 1,), -jnp.inf, jnp.float32).at[t].set(0.0)
    z1, z2 = jnp.zeros((t + 1,)), jnp.zeros((t + 1, d))
    _, L, A, JM, JL, JA = jax.lax.fori_loop(0, nb, body, (M0, z1, z2, M0, z1, z2))
    return {"out": A[:t] / L[:t, None] + 0.0 * JA[0, 0] * JL[0]}
