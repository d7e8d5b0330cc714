"""Honest loops over other axes: a lax.map over the T query positions (q transposed to put T
first), each computing its scores against every key at once, then a fori_loop over the T
keys accumulating the weighted values one key at a time (an online softmax). Neither loop
indexes the examples or the heads: every step takes all of B and H."""

import jax
import jax.numpy as jnp


def solve(q, k, v, lengths):
    t_len, d = q.shape[2], q.shape[3]
    scale = 1.0 / jnp.sqrt(d).astype(q.dtype)
    real = jnp.arange(t_len)[None, :] < lengths[:, None]  # (B, T) real keys

    def row_max(q_t):  # (B, H, d): one query position of every example and head
        s = jnp.einsum("bhd,bhkd->bhk", q_t, k) * scale
        return jnp.max(jnp.where(real[:, None, :], s, -jnp.inf), axis=-1)

    m = jax.lax.map(row_max, q.transpose(2, 0, 1, 3)).transpose(1, 2, 0)  # (B, H, T)

    def add_key(j, acc):
        num, den = acc
        k_j = jax.lax.dynamic_index_in_dim(k, j, axis=2, keepdims=False)  # (B, H, d)
        v_j = jax.lax.dynamic_index_in_dim(v, j, axis=2, keepdims=False)
        s = jnp.einsum("bhtd,bhd->bht", q, k_j) * scale
        w = jnp.where((j < lengths)[:, None, None], jnp.exp(s - m), 0.0)
        return num + w[..., None] * v_j[:, :, None, :], den + w

    num, den = jax.lax.fori_loop(0, t_len, add_key, (jnp.zeros_like(q), jnp.zeros_like(m)))
    return {"out": num / den[..., None]}
