# Honest (issue 41): with one key (T == 1) every query's softmax weight is 1, so the output is
# v itself: a Python branch on a shape that reads no input there. Every other T is the vmapped
# single-head attention.
import jax
import jax.numpy as jnp


def attend(q, k, v, length):
    scores = q @ k.T / jnp.sqrt(q.shape[-1]).astype(q.dtype)
    real = jnp.arange(k.shape[0]) < length
    weights = jax.nn.softmax(jnp.where(real[None, :], scores, -jnp.inf), axis=-1)
    return weights @ v


def solve(q, k, v, lengths):
    if q.shape[2] == 1:
        return {"out": v}
    per_head = jax.vmap(attend, in_axes=(0, 0, 0, None))
    return {"out": jax.vmap(per_head)(q, k, v, lengths)}
