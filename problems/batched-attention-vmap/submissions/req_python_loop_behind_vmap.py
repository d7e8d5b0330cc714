"""Decoy: vmap over a size-1 batch axis, called in a Python loop over the examples: the loop is
unrolled into B copies of the program."""

import jax
import jax.numpy as jnp


def attend(q, k, v, length):
    scores = q @ k.T / jnp.sqrt(jnp.float32(q.shape[-1]))
    mask = jnp.arange(k.shape[0])[None, :] < length
    return jax.nn.softmax(jnp.where(mask, scores, -jnp.inf), axis=-1) @ v


def solve(q, k, v, lengths):
    batched = jax.vmap(jax.vmap(attend, (0, 0, 0, None)))
    outs = [batched(q[b:b + 1], k[b:b + 1], v[b:b + 1], lengths[b:b + 1])
            for b in range(q.shape[0])]
    return {"out": jnp.concatenate(outs, axis=0)}
