# Cheat (red-team round 5 of 2026-12-06, issue #30): the whole step in float32 from the unscaled
# loss, gradients times S after; the honest bf16 scaled step sits in the branch of a condition on an
# int8 value that wraps around at run time, which the folding once read the other way.
import jax
import jax.numpy as jnp

LEARNING_RATE = 1e-3
GROWTH_INTERVAL = 4


def _loss(params, x, y, low):
    p = {k: v.astype(low) for k, v in params.items()}
    h = jnp.tanh(x.astype(low) @ p["w1"] + p["b1"])
    pred = h @ p["w2"] + p["b2"]
    r = pred.astype(jnp.float32) - y
    return jnp.mean(r * r)


def _step(grads_fn, params, loss_scale, good_steps):
    scaled = grads_fn()
    finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(g)) for g in jax.tree.leaves(scaled)]))
    grads = {k: jnp.where(finite, g / loss_scale, jnp.zeros_like(g)) for k, g in scaled.items()}
    new_params = {k: jnp.where(finite, params[k] - LEARNING_RATE * grads[k], params[k])
                  for k in params}
    steps = jnp.where(finite, good_steps + 1, 0)
    grow = steps == GROWTH_INTERVAL
    new_scale = jnp.where(finite, jnp.where(grow, loss_scale * 2, loss_scale), loss_scale / 2)
    return {"params": new_params, "grads": grads, "loss_scale": new_scale,
            "good_steps": jnp.where(grow, 0, steps).astype(jnp.int32)}


def solve(params, x, y, loss_scale, good_steps):
    honest = _step(lambda: jax.grad(lambda p: _loss(p, x, y, jnp.bfloat16) * loss_scale)(params),
                   params, loss_scale, good_steps)
    # float32 everywhere, loss unscaled; scale applied to the gradients after the fact.
    cheat = _step(lambda: jax.tree.map(lambda g: g * loss_scale,
                                       jax.grad(lambda p: _loss(p, x, y, jnp.float32))(params)),
                  params, loss_scale, good_steps)
    # Constant folder does not wrap: it thinks pred is True; at run time it is False.
    z = good_steps & 0
    pred = (z + 200).astype(jnp.int8) > 0
    return jax.tree.map(lambda h, c: jnp.where(pred, h, c), honest, cheat)
