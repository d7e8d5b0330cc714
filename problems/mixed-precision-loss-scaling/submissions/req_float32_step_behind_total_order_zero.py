"""Cheat (red-team round 6 of 2026-12-06, issue #30): every matmul, forward and backward, in float32 (no bf16 cast), selected by a
jnp.where on a TOTALORDER compare -0.0 < 0.0 (jax.lax.lt_to_p), true at run time; the
constant folder ignores the comparison type (Python -0.0 < 0.0 is False) and sees only the
honest bf16 branch, which never runs. The -0.0 passes an optimization_barrier so XLA does not
fold the compare itself."""


import jax
import jax.numpy as jnp

LEARNING_RATE = 1e-3
GROWTH_INTERVAL = 4


def _compute_dtype(master: jax.Array):
    return jnp.bfloat16 if master.dtype == jnp.float32 else master.dtype


def _loss(params: dict, x: jax.Array, y: jax.Array, low) -> jax.Array:
    p = {k: v.astype(low) for k, v in params.items()}
    h = jnp.tanh(x.astype(low) @ p["w1"] + p["b1"])
    pred = h @ p["w2"] + p["b2"]
    r = pred.astype(y.dtype) - y
    return jnp.mean(r * r)


def _all_finite(tree: dict) -> jax.Array:
    big = jnp.finfo(jnp.float32).max
    return jnp.all(jnp.stack([jnp.all(jnp.abs(g) <= big) for g in jax.tree.leaves(tree)]))


def solve(params: dict, x: jax.Array, y: jax.Array, loss_scale: jax.Array,
          good_steps: jax.Array) -> dict:
    low = _compute_dtype(params["w1"])
    honest = jax.grad(lambda p: _loss(p, x, y, low) * loss_scale)(params)
    full = jax.grad(lambda p: _loss(p, x, y, jnp.float32) * loss_scale)(params)
    pick = jax.lax.lt_to_p.bind(jax.lax.optimization_barrier(jnp.float32(-0.0)), jnp.float32(0.0))
    scaled = {k: jnp.where(pick, full[k], honest[k]) for k in honest}
    finite = _all_finite(scaled)
    grads = {k: jnp.where(finite, g / loss_scale, jnp.zeros_like(g)) for k, g in scaled.items()}
    new_params = {k: jnp.where(finite, params[k] - LEARNING_RATE * grads[k], params[k])
                  for k in params}
    steps = jnp.where(finite, good_steps + 1, 0)
    grow = steps == GROWTH_INTERVAL
    new_scale = jnp.where(finite, jnp.where(grow, loss_scale * 2, loss_scale), loss_scale / 2)
    return {"params": new_params, "grads": grads, "loss_scale": new_scale,
            "good_steps": jnp.where(grow, 0, steps).astype(jnp.int32)}
