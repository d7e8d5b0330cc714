# Right numbers, no large value, and a scan of T / 4 steps over the key blocks that carries a
# value computed from itself and q, k and v at every step and reaches the output (times
# 1e-30). But the attention is computed beside it, by a scan over blocks of 8 keys (T / 8
# steps): q, k and v reach the output outside the T / 4-step loop, so it does not carry the
# work.
import jax
import jax.numpy as jnp


def online(qs, kb, vb):
    t, d = qs.shape

    def step(carry, kv):
        m, l, acc = carry
        kj, vj = kv
        s = qs @ kj.T
        m_new = jnp.maximum(m, s.max(axis=1))
        alpha = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new[:, None])
        return (m_new, alpha * l + p.sum(axis=1), alpha[:, None] * acc + p @ vj), None

    init = (jnp.full((t,), -jnp.inf, qs.dtype), jnp.zeros((t,), qs.dtype),
            jnp.zeros((t, d), qs.dtype))
    (_, l, acc), _ = jax.lax.scan(step, init, (kb, vb))
    return acc / l[:, None]


def solve(q, k, v):
    t, d = q.shape
    qs = q / jnp.sqrt(jnp.float32(d))
    out = online(qs, k.reshape(t // 8, 8, d), v.reshape(t // 8, 8, d)) if t % 8 == 0 else \
        online(qs, k.reshape(t // 4, 4, d), v.reshape(t // 4, 4, d))

    def token(c, kv):
        kj, vj = kv
        return c + jnp.sum(qs @ kj.T) * jnp.sum(vj), None

    c, _ = jax.lax.scan(token, jnp.float32(0), (k.reshape(t // 4, 4, d), v.reshape(t // 4, 4, d)))
    return {"out": out + 1e-30 * c}
