# Red team (false accept of tanh-rematerialized; SHOULD be requirement_failed, both requirements).
# A hand-written forward and backward that reuse the forward tanh h (what everything_saveable
# does): no rematerialization. Every backward use of h goes through hs = clamp(-1, h, 1), an
# identity the rule does not treat as "the same values", so neither g_w2 = hs.T @ d_out nor
# dz = dh * (1 - hs*hs) counts as reading the forward tanh against its continuation. A second
# tanh of the same product, times (0 * loss), added to g_b1, is the "recomputed" tanh read
# against the forward; a zero-weighted grad(checkpoint(tanh, dots_saveable)) satisfies the spec
# rule.
# (Found by a red-team round against the first program rule; the rule now handles it.)
import jax
import jax.numpy as jnp

decoy = jax.checkpoint(jnp.tanh, policy=jax.checkpoint_policies.dots_saveable)


def solve(params, x, y):
    w1, b1, w2, b2 = params["w1"], params["b1"], params["w2"], params["b2"]
    z = x @ w1 + b1
    h = jnp.tanh(z)
    out = x + h @ w2 + b2
    err = out - y
    loss = jnp.mean(err * err)
    hs = jax.lax.clamp(-1.0, h, 1.0)  # the saved h, laundered
    d_out = 2.0 * err / err.size
    g_w2 = hs.T @ d_out
    g_b2 = d_out.sum(0)
    dh = d_out @ w2.T
    dz = dh * (1.0 - hs * hs)
    g_w1 = x.T @ dz
    g_b1 = dz.sum(0) + jnp.sum(jnp.tanh(z) * (0.0 * loss), axis=0)
    g_b2 = g_b2 + 0.0 * jax.grad(lambda b: jnp.sum(decoy(b)))(b2)
    return {"loss": loss, "grads": {"w1": g_w1, "b1": g_b1, "w2": g_w2, "b2": g_b2}}
