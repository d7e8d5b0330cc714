# Decoy: jax.lax.map over the B examples (a loop of B steps) when B == 4; nested vmap
# otherwise. No test or probe shape differs from a B == 4 one only in B, so the loops' trip
# counts are never compared; the map still reads q, k, v and lengths one example per step.
import jax
import jax.numpy as jnp


def _attend(q, k, v, length):
    s = q @ k.T / jnp.sqrt(q.shape[-1]).astype(q.dtype)
    s = jnp.where((jnp.arange(k.shape[0]) < length)[None, :], s, -jnp.inf)
    return jax.nn.softmax(s, axis=-1) @ v


def solve(q, k, v, lengths):
    per_example = jax.vmap(_attend, in_axes=(0, 0, 0, None))
    if q.shape[0] == 4:
        out = jax.lax.map(lambda a: per_example(*a), (q, k, v, lengths))
    else:
        out = jax.vmap(per_example)(q, k, v, lengths)
    return {"out": out}
