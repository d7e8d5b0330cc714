"""Scores without a matrix product: every query times every key, coordinate by coordinate,
summed over d. Under vmap the product is (B, H, T, T, d): d times the score matrices."""

import jax
import jax.numpy as jnp


def attend(q, k, v, length):
    scores = jnp.sum(q[:, None, :] * k[None, :, :], axis=-1) / jnp.sqrt(jnp.float32(q.shape[-1]))
    mask = jnp.arange(k.shape[0])[None, :] < length
    return jax.nn.softmax(jnp.where(mask, scores, -jnp.inf), axis=-1) @ v


def solve(q, k, v, lengths):
    return {"out": jax.vmap(jax.vmap(attend, (0, 0, 0, None)))(q, k, v, lengths)}
