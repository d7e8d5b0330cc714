# Accepted: lax.while_loop over block starts whose condition is `(start < T) & True` (an and
# with a constant true): the count is worked out by running the condition, T / 4 steps.
import jax
import jax.numpy as jnp

BLOCK = 4


def solve(q, k, v):
    t, d = q.shape
    qs = q / jnp.sqrt(jnp.float32(d))

    def body(state):
        start, m, l, acc = state
        kj = jax.lax.dynamic_slice_in_dim(k, start, BLOCK)
        vj = jax.lax.dynamic_slice_in_dim(v, start, BLOCK)
        s = qs @ kj.T
        m_new = jnp.maximum(m, s.max(axis=1))
        alpha = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new[:, None])
        return start + BLOCK, m_new, alpha * l + p.sum(axis=1), alpha[:, None] * acc + p @ vj

    init = (jnp.int32(0), jnp.full((t,), -jnp.inf, jnp.float32), jnp.zeros((t,)),
            jnp.zeros((t, d)))
    _, _, l, acc = jax.lax.while_loop(lambda s: (s[0] < t) & True, body, init)
    return {"out": acc / l[:, None]}
