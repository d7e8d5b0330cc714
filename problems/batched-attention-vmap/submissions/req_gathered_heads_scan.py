# Cheat (execution evidence): the heads copied by a gather with an index array from a sort, then
# one head per step of a fixed 4-step scan (the largest H).
import jax
import jax.numpy as jnp

H_MAX = 4


def _attend(q, k, v, length):
    s = q @ k.T / jnp.sqrt(q.shape[-1]).astype(q.dtype)
    s = jnp.where((jnp.arange(k.shape[0]) < length)[None, :], s, -jnp.inf)
    return jax.nn.softmax(s, axis=-1) @ v


def solve(q, k, v, lengths):
    h = q.shape[1]
    order = jnp.argsort(-jnp.arange(h))[::-1]
    qc, kc, vc = (jnp.take(a, order, axis=1) for a in (q, k, v))
    batch = jax.vmap(_attend, in_axes=(0, 0, 0, 0))

    def head(out, i):
        j = jnp.minimum(i, h - 1)
        o = batch(qc[:, j], kc[:, j], vc[:, j], lengths)
        return out.at[:, j].set(o), None

    out, _ = jax.lax.scan(head, jnp.zeros_like(q), jnp.arange(H_MAX))
    return {"out": out}
