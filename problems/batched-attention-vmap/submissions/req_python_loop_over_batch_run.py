"""Decoy in run mode: a Python loop over the examples, each one's heads vmapped. The loop is
unrolled into B copies of the attention. The examples (B = 1 and B = 2, other sizes differing
too) have no two sizes that differ only in B, so the judge compares its own probe sizes
(B = 3 and 5): it fails in run mode too."""

import jax
import jax.numpy as jnp


def attend(q, k, v, length):
    scores = q @ k.T / jnp.sqrt(jnp.float32(q.shape[-1]))
    mask = jnp.arange(k.shape[0])[None, :] < length
    return jax.nn.softmax(jnp.where(mask, scores, -jnp.inf), axis=-1) @ v


def solve(q, k, v, lengths):
    heads = jax.vmap(attend, (0, 0, 0, None))
    return {"out": jnp.stack([heads(q[b], k[b], v[b], lengths[b]) for b in range(q.shape[0])])}
