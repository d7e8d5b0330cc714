# Fails loop-over-key-blocks: a T/4-step fori_loop whose first T/8 steps each fold
# TWO 4-key blocks (two separate 4-row slices) and whose last T/8 steps idle (jnp.where on the
# counter passes the state along): unroll=2 padded to the right count.
import jax
import jax.numpy as jnp


def solve(q, k, v):
    t, d = q.shape
    qs = q / jnp.sqrt(jnp.float32(d))

    def fold(state, start):
        m, l, acc = state
        kj = jax.lax.dynamic_slice_in_dim(k, start, 4)
        vj = jax.lax.dynamic_slice_in_dim(v, start, 4)
        s = qs @ kj.T
        m_new = jnp.maximum(m, s.max(axis=1))
        a = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new[:, None])
        return m_new, a * l + p.sum(axis=1), a[:, None] * acc + p @ vj

    def body(j, state):
        one = fold(state, j * 8)
        two = fold(one, j * 8 + 4)
        new = tuple(jnp.where(j * 8 + 4 < t, b, a) for a, b in zip(one, two))
        return tuple(jnp.where(j * 8 < t, n, o) for n, o in zip(new, state))

    init = (jnp.full((t,), -jnp.inf), jnp.zeros((t,)), jnp.zeros((t, d)))
    _, l, acc = jax.lax.fori_loop(0, t // 4, body, init)
    return {"out": acc / l[:, None]}
