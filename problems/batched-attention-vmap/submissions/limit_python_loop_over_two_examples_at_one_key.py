# Known limit (issue 41): at one key (T == 1) the program walks the examples in a Python loop
# over v (sqrt(v^2) * sign(v) is v); every other T is the vmapped single-head attention. The
# only tests with T == 1 have B == 2, and two copies of per-example code are what a scan
# unrolled twice writes (observed_visits.MAX_UNROLL), so it is not told apart. The same loop
# reading q and k too was accepted before this sample; until q was allowed to go unread (the
# honest accepted_one_key_returns_v) this one failed only because q was unread.
import jax
import jax.numpy as jnp


def attend(q, k, v, length):
    scores = q @ k.T / jnp.sqrt(q.shape[-1]).astype(q.dtype)
    real = jnp.arange(k.shape[0]) < length
    weights = jax.nn.softmax(jnp.where(real[None, :], scores, -jnp.inf), axis=-1)
    return weights @ v


def solve(q, k, v, lengths):
    if q.shape[2] == 1:
        return {"out": jnp.stack([jnp.sqrt(v[b] * v[b]) * jnp.sign(v[b])
                                  for b in range(v.shape[0])])}
    per_head = jax.vmap(attend, in_axes=(0, 0, 0, None))
    return {"out": jax.vmap(per_head)(q, k, v, lengths)}
