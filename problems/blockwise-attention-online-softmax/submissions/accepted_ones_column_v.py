# Accepted: the flash-attention trick, a column of ones appended to v so that each block's
# p @ [vj | 1] gives the weighted values and the row sums in one product: a (4, d + 1) block
# is still one step's share of v (4d of v's elements; the ones are constants).
import jax
import jax.numpy as jnp

BLOCK = 4


def solve(q, k, v):
    t, d = q.shape
    qs = q / jnp.sqrt(jnp.float32(d))
    v1 = jnp.concatenate([v, jnp.ones((t, 1), v.dtype)], axis=1)  # (T, d + 1)

    def body(j, carry):
        m, acc = carry                                   # acc: (T, d + 1), last column = sum
        kj = jax.lax.dynamic_slice_in_dim(k, j * BLOCK, BLOCK)
        vj = jax.lax.dynamic_slice_in_dim(v1, j * BLOCK, BLOCK)
        s = qs @ kj.T
        m_new = jnp.maximum(m, s.max(axis=1))
        p = jnp.exp(s - m_new[:, None])
        return m_new, jnp.exp(m - m_new)[:, None] * acc + p @ vj

    m0 = jnp.full((t,), -jnp.inf, jnp.float32)
    _, acc = jax.lax.fori_loop(0, t // BLOCK, body, (m0, jnp.zeros((t, d + 1), jnp.float32)))
    return {"out": acc[:, :d] / acc[:, d:]}
