# Right numbers and no T x T value, but a Python loop over the blocks: it is unrolled into T/4
# copies of the body, so the program has no loop and grows with T.
import jax.numpy as jnp


def solve(q, k, v):
    t, d = q.shape
    qs = q / jnp.sqrt(jnp.float32(d))
    m = jnp.full((t,), -jnp.inf)
    l = jnp.zeros((t,))
    acc = jnp.zeros((t, d))
    for j in range(0, t, 4):
        s = qs @ k[j:j + 4].T
        m_new = jnp.maximum(m, s.max(axis=1))
        alpha = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new[:, None])
        l = alpha * l + p.sum(axis=1)
        acc = alpha[:, None] * acc + p @ v[j:j + 4]
        m = m_new
    return {"out": acc / l[:, None]}
