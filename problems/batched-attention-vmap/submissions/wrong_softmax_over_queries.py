"""Mistake: the softmax normalizes over the queries (axis 0 of the (T, T) scores), not over
the keys."""

import jax
import jax.numpy as jnp


def attend(q, k, v, length):
    scores = q @ k.T / jnp.sqrt(jnp.float32(q.shape[-1]))
    mask = jnp.arange(k.shape[0])[None, :] < length
    w = jax.nn.softmax(jnp.where(mask, scores, -1e30), axis=0)
    return jnp.where(mask, w, 0.0) @ v


def solve(q, k, v, lengths):
    return {"out": jax.vmap(jax.vmap(attend, (0, 0, 0, None)))(q, k, v, lengths)}
