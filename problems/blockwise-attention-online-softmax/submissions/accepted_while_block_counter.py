# Accepted: lax.while_loop with an explicit block counter, j = 0, 1, ... while j < T // 4.
import jax
import jax.numpy as jnp

BLOCK = 4


def solve(q, k, v):
    t, d = q.shape
    qs = q / jnp.sqrt(jnp.float32(d))
    kb = k.reshape(t // BLOCK, BLOCK, d)
    vb = v.reshape(t // BLOCK, BLOCK, d)

    def body(state):
        j, m, l, acc = state
        s = qs @ kb[j].T
        m_new = jnp.maximum(m, s.max(axis=1))
        alpha = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new[:, None])
        return j + 1, m_new, alpha * l + p.sum(axis=1), alpha[:, None] * acc + p @ vb[j]

    init = (jnp.int32(0), jnp.full((t,), -jnp.inf, jnp.float32), jnp.zeros((t,)),
            jnp.zeros((t, d)))
    _, _, l, acc = jax.lax.while_loop(lambda s: s[0] < t // BLOCK, body, init)
    return {"out": acc / l[:, None]}
