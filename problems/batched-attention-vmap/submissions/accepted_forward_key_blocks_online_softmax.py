# Honest (red-team round 6 of 2026-12-06, issue #30): flash-attention style, batched over B and H at once, keys taken in blocks of 4 (2 or
# 1 when T is not a multiple of 4) by a lax.scan from the first block to the last, online softmax,
# padded keys masked by lengths. No loop over B or H ("a loop over the keys" is allowed).
import jax
import jax.numpy as jnp
def solve(q, k, v, lengths):
    B, H, T, d = q.shape
    BLK = 4 if T % 4 == 0 else (2 if T % 2 == 0 else 1)
    nb = T // BLK
    kp, vp = k, v
    kb = kp.reshape(B, H, nb, BLK, d).transpose(2, 0, 1, 3, 4)
    vb = vp.reshape(B, H, nb, BLK, d).transpose(2, 0, 1, 3, 4)
    qs = q / jnp.sqrt(jnp.asarray(d, q.dtype))
    def step(c, e):
        m, l, acc = c
        kt, vt, j0 = e
        s = jnp.einsum("bhqd,bhkd->bhqk", qs, kt)
        real = (j0 + jnp.arange(BLK))[None, :] < lengths[:, None]        # (B, BLK)
        s = jnp.where(real[:, None, None, :], s, -jnp.inf)
        m_new = jnp.maximum(m, jnp.max(s, axis=-1))
        a = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new[..., None])
        acc = a[..., None] * acc + jnp.einsum("bhqk,bhkd->bhqd", p, vt)
        return (m_new, a * l + jnp.sum(p, -1), acc), None
    init = (jnp.full((B, H, T), -1e30, q.dtype), jnp.zeros((B, H, T), q.dtype), jnp.zeros_like(q))
    (_, l, acc), _ = jax.lax.scan(step, init, (kb, vb, jnp.arange(nb) * BLK))
    return {"out": acc / l[..., None]}
