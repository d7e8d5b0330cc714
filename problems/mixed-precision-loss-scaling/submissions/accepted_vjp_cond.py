# jax.vjp with the scale as the cotangent seed, and lax.cond to skip the step.
import jax
import jax.numpy as jnp

LR = 1e-3
PERIOD = 4
BF16 = jnp.bfloat16


def forward(params, x, y):
    w1, b1 = params["w1"].astype(BF16), params["b1"].astype(BF16)
    w2, b2 = params["w2"].astype(BF16), params["b2"].astype(BF16)
    pred = jnp.einsum("bh,h->b", jnp.tanh(jnp.einsum("bd,dh->bh", x.astype(BF16), w1) + b1),
                      w2) + b2
    err = pred.astype(jnp.float32) - y
    return jnp.sum(err * err) / y.shape[0]


def solve(params, x, y, loss_scale, good_steps):
    _, backward = jax.vjp(lambda p: forward(p, x, y), params)
    (scaled,) = backward(loss_scale)  # d(loss * scale) / d params
    ok = jnp.all(jnp.stack([jnp.all(jnp.isfinite(g)) for g in jax.tree.leaves(scaled)]))

    def apply(_):
        grads = jax.tree.map(lambda g: g * (1.0 / loss_scale), scaled)
        new = jax.tree.map(lambda p, g: p - LR * g, params, grads)
        n = good_steps + 1
        return new, grads, jnp.where(n == PERIOD, loss_scale * 2, loss_scale), n % PERIOD

    def skip(_):
        zeros = jax.tree.map(jnp.zeros_like, params)
        return params, zeros, loss_scale / 2, jnp.zeros_like(good_steps)

    new, grads, scale, steps = jax.lax.cond(ok, apply, skip, None)
    return {"params": new, "grads": grads, "loss_scale": scale, "good_steps": steps}
