# Accepted: a fori_loop over the T // 4 key blocks that also masks keys past T (j * 4 + i < T),
# as a learner writes for a T that is not a multiple of 4: a jnp.where on the block counter that
# never passes the state along unchanged.
import jax
import jax.numpy as jnp

BLOCK = 4


def solve(q, k, v):
    t, d = q.shape
    qs = q / jnp.sqrt(jnp.float32(d))

    def body(j, carry):
        m, l, acc = carry
        kj = jax.lax.dynamic_slice_in_dim(k, j * BLOCK, BLOCK)
        vj = jax.lax.dynamic_slice_in_dim(v, j * BLOCK, BLOCK)
        inside = j * BLOCK + jnp.arange(BLOCK) < t
        s = jnp.where(inside[None, :], qs @ kj.T, -jnp.inf)
        m_new = jnp.maximum(m, s.max(axis=1))
        alpha = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new[:, None])
        return m_new, alpha * l + p.sum(axis=1), alpha[:, None] * acc + p @ vj

    init = (jnp.full((t,), -jnp.inf, jnp.float32), jnp.zeros((t,)), jnp.zeros((t, d)))
    _, l, acc = jax.lax.fori_loop(0, t // BLOCK, body, init)
    return {"out": acc / l[:, None]}
