# Accepted: q, k and v stacked in one (3, T, d) array (3Td, the largest honest value measured:
# 0.75 of the bound 2T(d + 4) at d = 4), then a fori_loop over the key blocks with einsum scores.
import jax
import jax.numpy as jnp


def solve(q, k, v):
    t, d = q.shape
    x = jnp.stack([q / jnp.sqrt(jnp.float32(d)), k, v])
    qs, kb, vb = x[0], x[1].reshape(t // 4, 4, d), x[2].reshape(t // 4, 4, d)

    def body(j, c):
        m, l, a = c
        kj, vj = kb[j], vb[j]
        s = jnp.einsum("td,bd->tb", qs, kj)
        mn = jnp.maximum(m, s.max(1))
        al = jnp.exp(m - mn)
        p = jnp.exp(s - mn[:, None])
        return (mn, al * l + p.sum(1), al[:, None] * a + p @ vj)

    m, l, a = jax.lax.fori_loop(
        0, t // 4, body, (jnp.full((t,), -jnp.inf), jnp.zeros(t), jnp.zeros((t, d)))
    )
    return {"out": a / l[:, None]}
