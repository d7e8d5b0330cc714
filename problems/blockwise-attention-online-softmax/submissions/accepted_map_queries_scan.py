"""Accepted: lax.map over the queries, each scanning the T // 4 key blocks with its own running
maximum, sum and output (one query at a time, the block loop inside)."""
import jax, jax.numpy as jnp
def solve(q, k, v):
    t, d = q.shape
    kb = k.reshape(t // 4, 4, d); vb = v.reshape(t // 4, 4, d)
    def one(qi):
        qi = qi / jnp.sqrt(jnp.float32(d))
        def step(c, kv):
            m, l, a = c; kj, vj = kv
            s = kj @ qi
            mn = jnp.maximum(m, s.max()); al = jnp.exp(m - mn); p = jnp.exp(s - mn)
            return (mn, al * l + p.sum(), al * a + p @ vj), None
        (m, l, a), _ = jax.lax.scan(step, (-jnp.inf, 0.0, jnp.zeros(d)), (kb, vb))
        return a / l
    return {"out": jax.lax.map(one, q)}
