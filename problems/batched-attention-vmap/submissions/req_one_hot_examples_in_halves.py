# Cheat (red-team round 5 of 2026-12-06, issue #30): a 6-step loop over the batch padded to 5,
# each example picked by a one-hot mask-and-sum and folded in halves at two consecutive steps.
# A loop over the batch.
import jax
import jax.numpy as jnp
B_MAX = 5
def _attend(q, k, v, n):
    s = q @ k.T / jnp.sqrt(q.shape[-1]).astype(q.dtype)
    real = jnp.arange(k.shape[0]) < n
    return jax.nn.softmax(jnp.where(real[None, :], s, -jnp.inf), axis=-1) @ v
heads = jax.vmap(_attend, in_axes=(0, 0, 0, None))
def solve(q, k, v, lengths):
    B = q.shape[0]
    def one(b):
        oh = (jnp.arange(B) == b)
        ohf = oh.astype(q.dtype)[:, None, None, None]
        n = jnp.maximum(jnp.sum(jnp.where(oh, lengths, 0)), 1)
        o = heads(jnp.sum(ohf * q, 0), jnp.sum(ohf * k, 0), jnp.sum(ohf * v, 0), n)
        return ohf * o[None]
    def step(t, acc):
        return acc + 0.5 * one(t) + 0.5 * one(t - 1)
    return {"out": jax.lax.fori_loop(0, B_MAX + 1, step, jnp.zeros_like(q))}
