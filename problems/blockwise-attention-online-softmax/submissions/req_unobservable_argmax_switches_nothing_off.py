# Cheat (execution evidence): every key block at step 0, by an inner fori_loop whose trip count
# is where(j == 0, T // 4, 0) plus a data-derived zero; the outer loop's later steps run none.
import jax
import jax.numpy as jnp

BLOCK = 4


def solve(q, k, v):
    t, d = q.shape
    nb = t // BLOCK
    qs = q / jnp.sqrt(jnp.float32(d))
    zero = (jnp.abs(v).sum() * 0.0).astype(jnp.int32)

    def block(i, carry):
        m, l, acc = carry
        kj = jax.lax.dynamic_slice_in_dim(k, i * BLOCK, BLOCK)
        vj = jax.lax.dynamic_slice_in_dim(v, i * BLOCK, BLOCK)
        s = qs @ kj.T
        m_new = jnp.maximum(m, s.max(axis=1))
        alpha = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new[:, None])
        return m_new, alpha * l + p.sum(axis=1), alpha[:, None] * acc + p @ vj

    def body(j, carry):
        return jax.lax.fori_loop(0, jnp.where(j == 0, nb, 0) + zero, block, carry)

    m0 = jnp.full((t,), -jnp.inf, jnp.float32)
    _, l, acc = jax.lax.fori_loop(0, nb, body, (m0, jnp.zeros((t,)), jnp.zeros((t, d))))
    return {"out": acc / l[:, None]}


# --- appended: one op the observer does not evaluate (a two-operand reduce from argmax) ---
import functools as _ft
import jax as _jax
import jax.numpy as _jnp
_orig_solve = solve
@_ft.wraps(_orig_solve)
def solve(*a, **kw):
    out = dict(_orig_solve(*a, **kw))
    k = next(iter(out))
    z = _jnp.argmax(_jnp.arange(3.0) * out[k].reshape(-1)[:1])
    out[k] = out[k] + (z * 0).astype(out[k].dtype)
    return out
