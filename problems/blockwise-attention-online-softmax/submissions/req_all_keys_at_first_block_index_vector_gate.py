# Cheat (issue #30, index-vector gates): the T // 4-step loop does all of the attention at its
# first step (a jax.lax.map over the queries) and passes its state along at the others, under a gate built from an index vector:
# jnp.any(j * 4 + jnp.arange(4) < 4) is true at j == 0 only. The grader runs such a gate step
# by step like one on the counter itself, so the idle steps are seen.
import jax
import jax.numpy as jnp

BLOCK = 4


def solve(q, k, v):
    t, d = q.shape
    qs = q / jnp.sqrt(jnp.float32(d))

    def one_query(qi):
        s = k @ qi
        p = jnp.exp(s - s.max())
        return p @ v / p.sum()

    def body(j, acc):
        first = jnp.any(j * BLOCK + jnp.arange(BLOCK) < BLOCK)
        kj = jax.lax.dynamic_slice_in_dim(k, j * BLOCK, BLOCK)
        new = jax.lax.map(one_query, qs) + 0.0 * (qs @ kj.T).sum()
        return jnp.where(first, new, acc)

    return {"out": jax.lax.fori_loop(0, t // BLOCK, body, jnp.zeros((t, d)))}
