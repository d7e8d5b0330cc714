"""Mistake: no 1 / sqrt(d) on the scores."""

import jax
import jax.numpy as jnp


def attend(q, k, v, length):
    scores = q @ k.T
    mask = jnp.arange(k.shape[0])[None, :] < length
    return jax.nn.softmax(jnp.where(mask, scores, -jnp.inf), axis=-1) @ v


def solve(q, k, v, lengths):
    return {"out": jax.vmap(jax.vmap(attend, (0, 0, 0, None)))(q, k, v, lengths)}
