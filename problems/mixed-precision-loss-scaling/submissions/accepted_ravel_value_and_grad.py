# value_and_grad on a flat parameter vector (ravel_pytree); tanh evaluated in float32 and
# rounded back to bfloat16; one finiteness test on the flat gradient.
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

LEARNING_RATE = 1e-3
GROWTH_INTERVAL = 4


def solve(params, x, y, loss_scale, good_steps):
    flat, unravel = ravel_pytree(params)

    def scaled_loss(v):
        p = unravel(v.astype(jnp.bfloat16))
        pre = jnp.dot(x.astype(jnp.bfloat16), p["w1"]) + p["b1"]
        h = jnp.tanh(pre.astype(jnp.float32)).astype(jnp.bfloat16)
        pred = jnp.dot(h, p["w2"]) + p["b2"]
        loss = jnp.mean(jnp.square(pred.astype(jnp.float32) - y))
        return loss * loss_scale, loss

    (_, _), g = jax.value_and_grad(scaled_loss, has_aux=True)(flat)
    g = g.astype(jnp.float32)
    finite = jnp.isfinite(g).all()
    g = jnp.where(finite, g / loss_scale, jnp.zeros_like(g))
    new = jnp.where(finite, flat - LEARNING_RATE * g, flat)
    count = jnp.where(finite, good_steps + 1, 0)
    grow = count >= GROWTH_INTERVAL
    scale = loss_scale * jnp.where(finite, jnp.where(grow, 2.0, 1.0), 0.5)
    return {"params": unravel(new), "grads": unravel(g), "loss_scale": scale,
            "good_steps": jnp.where(grow, 0, count).astype(jnp.int32)}
