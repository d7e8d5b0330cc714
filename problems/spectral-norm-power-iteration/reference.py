"""Trusted reference for "Spectral norm by power iteration".

One `lax.fori_loop` of exactly NUM_ITERS steps carries the pair (u, v); each step is one right
update (v from w^T u) and one left update (u from w v), so the `loop_over_dim` requirement
(trip count 8) holds. Every normalization divides by max(||x||, EPS): zero vectors stay zero,
and a zero estimate leaves w unchanged.
"""

import jax
import jax.numpy as jnp

NUM_ITERS = 8
EPS = 1e-12


def _normalize(x: jax.Array) -> jax.Array:
    return x / jnp.maximum(jnp.linalg.norm(x), EPS)


def solve(w: jax.Array, u: jax.Array) -> dict[str, jax.Array]:
    """{"sigma": (), "u": (M,), "w_sn": (M, N)} after NUM_ITERS power iterations from u."""

    def step(_: jax.Array, uv: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        v = _normalize(w.T @ uv[0])
        return _normalize(w @ v), v

    u, v = jax.lax.fori_loop(0, NUM_ITERS, step, (u, jnp.zeros_like(w[0])))
    sigma = u @ (w @ v)
    w_sn = w / jnp.where(sigma > 0, sigma, 1)
    return {"sigma": sigma, "u": u, "w_sn": w_sn}
