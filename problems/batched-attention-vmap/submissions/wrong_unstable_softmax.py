"""Mistake: exp of the raw scores, without subtracting the row maximum: scores of a few hundred
overflow to inf (and inf / inf is NaN)."""

import jax
import jax.numpy as jnp


def attend(q, k, v, length):
    scores = q @ k.T / jnp.sqrt(jnp.float32(q.shape[-1]))
    mask = jnp.arange(k.shape[0])[None, :] < length
    w = jnp.where(mask, jnp.exp(jnp.where(mask, scores, 0.0)), 0.0)
    return (w / jnp.sum(w, axis=-1, keepdims=True)) @ v


def solve(q, k, v, lengths):
    return {"out": jax.vmap(jax.vmap(attend, (0, 0, 0, None)))(q, k, v, lengths)}
