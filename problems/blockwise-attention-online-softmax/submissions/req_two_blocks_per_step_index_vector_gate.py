# Cheat (issue #30, index-vector gates): two key blocks per step for the first half of the
# steps, then idle steps, under a gate built from an index vector (jnp.any of the two blocks'
# key indices being below T), not from the counter alone. The grader runs such a gate step by
# step: the idle second half is seen.
import jax
import jax.numpy as jnp

BLOCK = 4


def solve(q, k, v):
    t, d = q.shape
    nb = t // BLOCK
    qs = q / jnp.sqrt(jnp.float32(d))
    kk, vv = jnp.concatenate([k, k]), jnp.concatenate([v, v])

    def body(j, carry):
        m, l, acc = carry
        keys = 2 * j * BLOCK + jnp.arange(2 * BLOCK)
        kj = jax.lax.dynamic_slice_in_dim(kk, 2 * j * BLOCK, 2 * BLOCK)
        vj = jax.lax.dynamic_slice_in_dim(vv, 2 * j * BLOCK, 2 * BLOCK)
        s = jnp.where(keys[None, :] < t, qs @ kj.T, -jnp.inf)
        m_new = jnp.maximum(m, s.max(axis=1))
        alpha = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new[:, None])
        new = (m_new, alpha * l + p.sum(axis=1), alpha[:, None] * acc + p @ vj)
        on = jnp.any(keys < t)
        return tuple(jnp.where(on, a, b) for a, b in zip(new, carry))

    m0 = jnp.full((t,), -jnp.inf, jnp.float32)
    _, l, acc = jax.lax.fori_loop(0, nb, body, (m0, jnp.zeros((t,)), jnp.zeros((t, d))))
    return {"out": acc / l[:, None]}
