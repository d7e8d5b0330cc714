# The backward pass written by hand, in bfloat16, on the scaled derivative of the loss.
import jax.numpy as jnp

LEARNING_RATE = 1e-3
GROWTH_INTERVAL = 4
LOW = jnp.bfloat16


def solve(params, x, y, loss_scale, good_steps):
    x16 = x.astype(LOW)
    w1, b1, w2, b2 = (params[k].astype(LOW) for k in ("w1", "b1", "w2", "b2"))
    h = jnp.tanh(x16 @ w1 + b1)                           # (B, H) bfloat16
    pred = h @ w2 + b2                                    # (B,)   bfloat16
    r = pred.astype(jnp.float32) - y                      # the loss in float32
    dpred = (loss_scale * 2.0 / y.shape[0] * r).astype(LOW)  # scaled d loss / d pred
    dz = jnp.outer(dpred, w2) * (1 - h * h)               # (B, H) bfloat16
    scaled = {"w1": x16.T @ dz, "b1": dz.sum(0), "w2": h.T @ dpred, "b2": dpred.sum()}
    scaled = {k: v.astype(jnp.float32) for k, v in scaled.items()}
    finite = jnp.all(jnp.array([jnp.isfinite(v).all() for v in scaled.values()]))
    grads = {k: jnp.where(finite, v / loss_scale, 0.0) for k, v in scaled.items()}
    new = {k: params[k] - jnp.where(finite, LEARNING_RATE, 0.0) * grads[k] for k in params}
    steps = jnp.where(finite, good_steps + 1, 0)
    scale = jnp.where(finite, loss_scale, loss_scale / 2)
    scale = jnp.where(steps == GROWTH_INTERVAL, scale * 2, scale)
    return {"params": new, "grads": grads, "loss_scale": scale,
            "good_steps": jnp.where(steps == GROWTH_INTERVAL, 0, steps)}
