# Accepted: one scan over blocks of keys and values packed side by side, (T/4, 4, 2d), and
# the running maximum, sum and output packed in one (T, d + 2) carry (2Td < 2T(d + 4)).
import jax
import jax.numpy as jnp


def solve(q, k, v):
    t, d = q.shape
    qs = q / jnp.sqrt(jnp.float32(d))
    kv = jnp.concatenate([k, v], axis=1).reshape(t // 4, 4, 2 * d)

    def step(c, blk):
        m, l, a = c[:, 0], c[:, 1], c[:, 2:]
        kj, vj = blk[:, :d], blk[:, d:]
        s = qs @ kj.T
        mn = jnp.maximum(m, s.max(1))
        al = jnp.exp(m - mn)
        p = jnp.exp(s - mn[:, None])
        return jnp.concatenate(
            [mn[:, None], (al * l + p.sum(1))[:, None], al[:, None] * a + p @ vj], 1
        ), None

    init = jnp.concatenate([jnp.full((t, 1), -jnp.inf), jnp.zeros((t, 1 + d))], 1)
    c, _ = jax.lax.scan(step, init, kv)
    return {"out": c[:, 2:] / c[:, 1:2]}
