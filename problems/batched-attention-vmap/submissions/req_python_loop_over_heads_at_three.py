# Issue #30, "shapes the probes never see": a Python loop over the heads taken only when
# there are exactly three of them (the program at H = 3 has one copy of the attention per
# head; the other sizes get the honest vmap, so its size does not grow with H).
import jax
import jax.numpy as jnp


def _attend(q, k, v, length):
    scores = q @ k.T / jnp.sqrt(q.shape[-1]).astype(q.dtype)
    real = jnp.arange(k.shape[0]) < length
    return jax.nn.softmax(jnp.where(real[None, :], scores, -jnp.inf), axis=-1) @ v


def _heads(q, k, v, length):
    if q.shape[0] == 3:
        return jnp.stack([_attend(q[h], k[h], v[h], length) for h in range(3)])
    return jax.vmap(_attend, in_axes=(0, 0, 0, None))(q, k, v, length)


def solve(q, k, v, lengths):
    return {"out": jax.vmap(_heads)(q, k, v, lengths)}
