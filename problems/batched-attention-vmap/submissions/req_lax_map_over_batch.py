"""Decoy: lax.map over the examples (a while loop of B steps: the program does not grow with
B), vmap over the heads inside."""

import jax
import jax.numpy as jnp


def attend(q, k, v, length):
    scores = q @ k.T / jnp.sqrt(jnp.float32(q.shape[-1]))
    mask = jnp.arange(k.shape[0])[None, :] < length
    return jax.nn.softmax(jnp.where(mask, scores, -jnp.inf), axis=-1) @ v


def solve(q, k, v, lengths):
    heads = jax.vmap(attend, in_axes=(0, 0, 0, None))
    return {"out": jax.lax.map(lambda args: heads(*args), (q, k, v, lengths))}
