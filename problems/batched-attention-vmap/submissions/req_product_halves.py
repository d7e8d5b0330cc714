"""Decoy: the coordinate-by-coordinate product formed in two halves of d, (B, H, T, T, d/2)
each, to stay below a limit of B*H*T*T*d."""

import jax
import jax.numpy as jnp


def attend(q, k, v, length):
    h = q.shape[-1] // 2
    first = jnp.sum(q[:, None, :h] * k[None, :, :h], axis=-1)
    second = jnp.sum(q[:, None, h:] * k[None, :, h:], axis=-1)
    scores = (first + second) / jnp.sqrt(jnp.float32(q.shape[-1]))
    mask = jnp.arange(k.shape[0])[None, :] < length
    return jax.nn.softmax(jnp.where(mask, scores, -jnp.inf), axis=-1) @ v


def solve(q, k, v, lengths):
    return {"out": jax.vmap(jax.vmap(attend, (0, 0, 0, None)))(q, k, v, lengths)}
