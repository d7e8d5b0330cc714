# Right numbers, but two blocks of keys (8 keys) per step while the counter is compared as
# (j * 4) // 4 < T // 4: its count, worked out by running the condition, is ceil(T / 8)
# steps, not T / 4, and the message names that loop. A second block past the last is masked.
import jax
import jax.numpy as jnp

BLOCK = 4


def solve(q, k, v):
    t, d = q.shape
    n_blocks = t // BLOCK
    qs = q / jnp.sqrt(jnp.float32(d))
    kp = jnp.concatenate([k, jnp.zeros((BLOCK, d), k.dtype)])   # room for a masked block
    vp = jnp.concatenate([v, jnp.zeros((BLOCK, d), v.dtype)])

    def body(state):
        j, m, l, acc = state
        kj = jax.lax.dynamic_slice_in_dim(kp, j * BLOCK, 2 * BLOCK)
        vj = jax.lax.dynamic_slice_in_dim(vp, j * BLOCK, 2 * BLOCK)
        s = qs @ kj.T                                   # (T, 8)
        real = (j * BLOCK + jnp.arange(2 * BLOCK)) < t
        s = jnp.where(real[None, :], s, -jnp.inf)
        m_new = jnp.maximum(m, s.max(axis=1))
        alpha = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new[:, None])
        return j + 2, m_new, alpha * l + p.sum(axis=1), alpha[:, None] * acc + p @ vj

    init = (jnp.int32(0), jnp.full((t,), -jnp.inf, jnp.float32), jnp.zeros((t,)),
            jnp.zeros((t, d)))
    _, _, l, acc = jax.lax.while_loop(lambda s: (s[0] * BLOCK) // BLOCK < n_blocks, body, init)
    return {"out": acc / l[:, None]}
