# Honest (red-team round of 2026-12-06): a running log-sum-exp carried with a normalised output.
import jax
import jax.numpy as jnp

BLOCK = 4


def solve(q, k, v):
    t, d = q.shape
    nb = t // BLOCK
    qs = q / jnp.sqrt(jnp.float32(d))
    kb = k.reshape(nb, BLOCK, d)
    vb = v.reshape(nb, BLOCK, d)

    def step(c, kv):
        lse, o = c
        kj, vj = kv
        s = qs @ kj.T
        lse_new = jnp.logaddexp(lse, jax.nn.logsumexp(s, axis=1))
        o = jnp.exp(lse - lse_new)[:, None] * o + jnp.exp(s - lse_new[:, None]) @ vj
        return (lse_new, o), None

    init = (jnp.full((t,), -jnp.inf, jnp.float32), jnp.zeros((t, d), jnp.float32))
    (_, o), _ = jax.lax.scan(step, init, (kb, vb))
    return {"out": o}
