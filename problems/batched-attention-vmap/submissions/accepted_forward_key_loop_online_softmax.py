# Honest (red-team round 6 of 2026-12-06, issue #30): batched over B and H at once, an online (flash-style) softmax over the keys in a
# lax.scan over T from the first key to the last, padded keys masked by lengths. No loop over
# B or H: the statement allows "a loop over the keys".
import jax
import jax.numpy as jnp
def solve(q, k, v, lengths):
    B, H, T, d = q.shape
    qs = q / jnp.sqrt(jnp.asarray(d, q.dtype))
    def step(c, t):
        m, l, acc = c
        kt = k[:, :, t]
        vt = v[:, :, t]
        s = jnp.einsum("bhqd,bhd->bhq", qs, kt)
        real = (t < lengths)[:, None, None]
        s = jnp.where(real, s, -jnp.inf)
        m_new = jnp.maximum(m, s)
        a = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new)
        return (m_new, a * l + p, a[..., None] * acc + p[..., None] * vt[:, :, None, :]), None
    init = (jnp.full((B, H, T), -1e30, q.dtype), jnp.zeros((B, H, T), q.dtype), jnp.zeros_like(q))
    (_, l, acc), _ = jax.lax.scan(step, init, jnp.arange(T))
    return {"out": acc / l[..., None]}
