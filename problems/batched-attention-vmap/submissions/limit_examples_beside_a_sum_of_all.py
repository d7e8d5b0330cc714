# Known limit, accepted today (issue #30, a form of red-team round 5's halves): a fixed 5-step loop over the examples,
# each picked by a one-hot mask-and-sum and attended at its own step, beside a sum of every
# example added at step 0 and taken off at the last: every example moves the loop's state at
# step 0, its own step and the last. A loop over the batch.
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
    decoy = 1e-2 * sum(jnp.sum(a, axis=0, keepdims=True) for a in (q, k, v))

    def one(b):
        oh = jnp.arange(B) == b
        ohf = oh.astype(q.dtype)[:, None, None, None]
        n = jnp.maximum(jnp.sum(jnp.where(oh, lengths, 0)), 1)
        o = heads(jnp.sum(ohf * q, 0), jnp.sum(ohf * k, 0), jnp.sum(ohf * v, 0), n)
        return ohf * o[None]

    def step(t, acc):
        sign = jnp.where(t == 0, 1.0, jnp.where(t == B_MAX - 1, -1.0, 0.0)).astype(q.dtype)
        return acc + one(t) + sign * decoy

    return {"out": jax.lax.fori_loop(0, B_MAX, step, jnp.zeros_like(q))}
