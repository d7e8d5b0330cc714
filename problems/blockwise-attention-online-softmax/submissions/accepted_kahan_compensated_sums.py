# Accepted (red-team round 4 of 2026-12-06): the online softmax with Kahan-compensated l and
# acc, their residuals carried.
import jax
import jax.numpy as jnp

BLOCK = 4


def solve(q, k, v):
    t, d = q.shape
    qs = q / jnp.sqrt(jnp.float32(d))

    def body(j, carry):
        m, l, cl, acc, ca = carry
        kj = jax.lax.dynamic_slice_in_dim(k, j * BLOCK, BLOCK)
        vj = jax.lax.dynamic_slice_in_dim(v, j * BLOCK, BLOCK)
        s = qs @ kj.T
        m_new = jnp.maximum(m, s.max(axis=1))
        a = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new[:, None])
        l0, cl0 = a * l, a * cl
        dl = p.sum(axis=1) - cl0
        l1 = l0 + dl
        cl1 = (l1 - l0) - dl
        acc0, ca0 = a[:, None] * acc, a[:, None] * ca
        da = p @ vj - ca0
        acc1 = acc0 + da
        ca1 = (acc1 - acc0) - da
        return m_new, l1, cl1, acc1, ca1

    m0 = jnp.full((t,), -jnp.inf, jnp.float32)
    z = jnp.zeros((t,))
    _, l, _, acc, _ = jax.lax.fori_loop(0, t // BLOCK, body, (m0, z, z, jnp.zeros((t, d)), jnp.zeros((t, d))))
    return {"out": acc / l[:, None]}
