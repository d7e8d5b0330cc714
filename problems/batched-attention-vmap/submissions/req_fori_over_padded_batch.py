"""Decoy: a fori_loop of a constant 5 steps (the largest B) over the examples padded to B = 5,
one example per step (vmapped over its heads) written into the output. Its trip count is 5
for every B, so the programs' loops never differ; it still reads q, k, v and lengths one
example at a time, at an index computed from the loop's counter."""

import jax
import jax.numpy as jnp

B_MAX = 5


def _attend(q, k, v, length):
    s = q @ k.T / jnp.sqrt(q.shape[-1]).astype(q.dtype)
    s = jnp.where((jnp.arange(k.shape[0]) < length)[None, :], s, -jnp.inf)
    return jax.nn.softmax(s, axis=-1) @ v


def solve(q, k, v, lengths):
    b = q.shape[0]
    pad = ((0, B_MAX - b), (0, 0), (0, 0), (0, 0))
    qp, kp, vp = jnp.pad(q, pad), jnp.pad(k, pad), jnp.pad(v, pad)
    lp = jnp.pad(lengths, (0, B_MAX - b), constant_values=1)
    heads = jax.vmap(_attend, in_axes=(0, 0, 0, None))

    def example(i, out):
        return out.at[i].set(heads(qp[i], kp[i], vp[i], lp[i]))

    out = jax.lax.fori_loop(0, B_MAX, example, jnp.zeros_like(qp))
    return {"out": out[:b]}
