# Two key blocks per step for the first T/8 steps, then idle steps (like
# submissions/req_two_blocks_per_step_then_idle.py), but the idle branch passes the state along
# as state * 1.0 (not the carried value itself) and the gate is read from an int mask indexed
# by the counter: (arange(T//4) < T//8)[j]. Should be requirement_failed.
import jax
import jax.numpy as jnp


def solve(q, k, v):
    t, d = q.shape
    nb = t // 4
    qs = q / jnp.sqrt(jnp.float32(d))
    busy = jnp.arange(nb) < (nb + 1) // 2

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
        return tuple(jnp.where(busy[j], n, o * 1.0) for n, o in zip(new, state))

    init = (jnp.full((t,), -jnp.inf), jnp.zeros((t,)), jnp.zeros((t, d)))
    _, l, acc = jax.lax.fori_loop(0, nb, body, init)
    return {"out": acc / l[:, None]}
