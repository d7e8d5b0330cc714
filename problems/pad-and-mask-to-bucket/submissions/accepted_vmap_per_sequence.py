# One sequence at a time under jax.vmap; the batch is padded with a concatenation of zeros,
# the softmax taken with logsumexp over the valid positions.
import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

BUCKETS = (4, 8, 12, 16)


def one(seq, n_valid, q):
    mask = jnp.arange(seq.shape[0]) < n_valid
    seq = jnp.where(mask[:, None], seq, 0.0)
    mean = seq.sum(0) / n_valid
    s = jnp.where(mask, seq @ q / jnp.sqrt(jnp.float32(seq.shape[1])), -jnp.inf)
    w = jnp.exp(s - logsumexp(s))
    return mean, w @ seq


def solve(x, lengths, q):
    b, length, d = x.shape
    n = [k for k in BUCKETS if k >= length][0]
    xp = jnp.concatenate([x, jnp.zeros((b, n - length, d), x.dtype)], axis=1)
    mean, pooled = jax.vmap(one, in_axes=(0, 0, None))(xp, lengths, q)
    return {"mean": mean, "pooled": pooled}
