# The online softmax scanned over the key blocks, but the blocks are cut out by a Python loop
# (two slices per block): the program grows with T by a few operations per block, fewer than
# T grows by but one or more per step of the T // 4 loop. The examples all have T = 16, so the
# judge compares its own probe sizes (T = 16, 20, 24: multiples of 4): it fails in run mode too.
import jax
import jax.numpy as jnp


def solve(q, k, v):
    t, d = q.shape
    scale = 1.0 / jnp.sqrt(jnp.float32(d))
    kb = jnp.stack([k[j:j + 4] for j in range(0, t, 4)])
    vb = jnp.stack([v[j:j + 4] for j in range(0, t, 4)])

    def step(carry, block):
        m, l, acc = carry
        kj, vj = block
        s = (q @ kj.T) * scale
        m_new = jnp.maximum(m, jnp.max(s, axis=-1, keepdims=True))
        p = jnp.exp(s - m_new)
        correction = jnp.exp(m - m_new)
        l = l * correction + jnp.sum(p, axis=-1, keepdims=True)
        acc = acc * correction + p @ vj
        return (m_new, l, acc), None

    init = (jnp.full((t, 1), -jnp.inf), jnp.zeros((t, 1)), jnp.zeros((t, d)))
    (m, l, acc), _ = jax.lax.scan(step, init, (kb, vb))
    return {"out": acc / l}
