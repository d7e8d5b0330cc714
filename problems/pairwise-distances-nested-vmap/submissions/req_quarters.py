"""Decoy: the (N, M, D) differences formed a quarter of the features at a time, (N, M, D/4)
each, to stay below a limit of N*M*D (or half of it). Each quarter still holds N*M*D/4 values."""

import jax.numpy as jnp


def solve(x, y):
    step = -(-x.shape[1] // 4)  # ceil(D / 4)
    d2 = jnp.zeros((x.shape[0], y.shape[0]), x.dtype)
    for start in range(0, x.shape[1], step):
        diff = x[:, None, start:start + step] - y[None, :, start:start + step]
        d2 = d2 + jnp.sum(diff * diff, axis=2)
    return {"d2": d2, "d": jnp.sqrt(d2)}
