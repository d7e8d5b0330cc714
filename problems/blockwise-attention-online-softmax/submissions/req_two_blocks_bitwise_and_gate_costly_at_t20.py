# Cheat (red-team round of 2026-12-06 on index-vector gates): an honest scan at every T but 20.
# At T = 20, a T/4-step fori_loop whose first steps each fold TWO 4-key blocks and whose last
# ones idle, the idle gate a bitwise-AND reduction of an index vector (1 + [0, 1] * (8j >= T):
# AND 1 while 8j < T, 0 after). A dead 5,000-step scalar loop makes the T = 20 run too costly
# for the observer's budget share, so only the text analysis guards that shape: it runs the
# gate bitwise, as XLA does, and sees the idle steps.
import jax
import jax.numpy as jnp


def _honest(q, k, v):
    t, d = q.shape
    qs = q / jnp.sqrt(jnp.float32(d))

    def step(state, kv):
        m, l, acc = state
        kj, vj = kv
        s = qs @ kj.T
        m_new = jnp.maximum(m, s.max(axis=1))
        a = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new[:, None])
        return (m_new, a * l + p.sum(axis=1), a[:, None] * acc + p @ vj), None

    init = (jnp.full((t,), -jnp.inf), jnp.zeros((t,)), jnp.zeros((t, d)))
    (_, l, acc), _ = jax.lax.scan(step, init, (k.reshape(t // 4, 4, d), v.reshape(t // 4, 4, d)))
    return acc / l[:, None]


def solve(q, k, v):
    t, d = q.shape
    if t != 20:
        return {"out": _honest(q, k, v)}
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
        pair = 1 + jnp.arange(2, dtype=jnp.int32) * (j * 8 >= t).astype(jnp.int32)
        on = jax.lax.reduce(pair, jnp.int32(-1), jax.lax.bitwise_and, (0,)) != 0
        return tuple(jnp.where(on, n, o) for n, o in zip(new, state))

    init = (jnp.full((t,), -jnp.inf), jnp.zeros((t,)), jnp.zeros((t, d)))
    _, l, acc = jax.lax.fori_loop(0, t // 4, body, init)
    dead = jax.lax.fori_loop(0, 5000, lambda i, c: c * 0.5 + 1.0, q.sum())
    return {"out": acc / l[:, None] + 0.0 * dead}
