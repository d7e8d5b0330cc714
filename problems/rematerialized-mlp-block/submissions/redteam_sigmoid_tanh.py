# Red team (false accept of tanh-rematerialized; SHOULD be requirement_failed, both requirements).
# No rematerialization: plain value_and_grad, no checkpoint. The block's activation is tanh
# written as 2*sigmoid(2z) - 1 (numerically equal within the tolerance), so there is no tanh op
# in the real block and the rule has nothing to check there; it only looks at tanh ops fed by
# the product. A decoy pair (tanh(x@W1+b1) feeding a contraction; a second tanh of that product
# times the contraction's result times zero, added to grads["b1"]) is the "rematerialization";
# checkpoint(tanh(b2), dots_saveable) times zero in the loss satisfies the spec rule.
# (Found by a red-team round against the first program rule; the rule now handles it.)
import jax
import jax.numpy as jnp

decoy = jax.checkpoint(jnp.tanh, policy=jax.checkpoint_policies.dots_saveable)


def loss_fn(p, x, y):
    h = 2.0 * jax.nn.sigmoid(2.0 * (x @ p["w1"] + p["b1"])) - 1.0
    return jnp.mean((x + h @ p["w2"] + p["b2"] - y) ** 2) + 0.0 * jnp.sum(decoy(p["b2"]))


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    z = x @ params["w1"] + params["b1"]
    s = jnp.sum(jnp.tanh(z) @ params["w2"])
    fake = jnp.tanh(z) * (0.0 * s)
    grads = dict(grads, b1=grads["b1"] + jnp.sum(fake, axis=0))
    return {"loss": loss, "grads": grads}
