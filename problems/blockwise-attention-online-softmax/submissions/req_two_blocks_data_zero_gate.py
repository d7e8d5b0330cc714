# Cheat (execution evidence): two key blocks per step for the first half of the steps, then idle
# steps, under a gate that mixes the block counter with a data zero (min(|k|, 0)) so the text
# analysis cannot run it.
import jax
import jax.numpy as jnp

BLOCK = 4


def solve(q, k, v):
    t, d = q.shape
    nb = t // BLOCK
    qs = q / jnp.sqrt(jnp.float32(d))
    zero = jnp.minimum(jnp.abs(k).sum(), 0.0)

    def body(j, carry):
        m, l, acc = carry
        start = jnp.minimum(2 * j, nb - 1) * BLOCK
        kj = jax.lax.dynamic_slice_in_dim(jnp.concatenate([k, k[:BLOCK]]), start, 2 * BLOCK)
        vj = jax.lax.dynamic_slice_in_dim(jnp.concatenate([v, v[:BLOCK]]), start, 2 * BLOCK)
        s = qs @ kj.T
        second = 2 * j + 1 < nb
        s = jnp.where((jnp.arange(2 * BLOCK) < BLOCK) | second, s, -jnp.inf)
        m_new = jnp.maximum(m, s.max(axis=1))
        alpha = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new[:, None])
        new = (m_new, alpha * l + p.sum(axis=1), alpha[:, None] * acc + p @ vj)
        on = (2 * j < nb).astype(jnp.float32) + zero > 0.5
        return tuple(jnp.where(on, a, b) for a, b in zip(new, carry))

    m0 = jnp.full((t,), -jnp.inf, jnp.float32)
    _, l, acc = jax.lax.fori_loop(0, nb, body, (m0, jnp.zeros((t,)), jnp.zeros((t, d))))
    return {"out": acc / l[:, None]}
