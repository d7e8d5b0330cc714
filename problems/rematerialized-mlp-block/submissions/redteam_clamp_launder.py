# Red team (false accept of tanh-rematerialized; SHOULD be requirement_failed, both requirements).
# No rematerialization: plain value_and_grad, no checkpoint, so the backward pass reads the
# stored forward tanh. The tanh goes through an identity clamp(-1, ., 1) before h @ W2; clamp is
# not "linear" for the rule, so the tanh has no continuation (fwd(F) is empty) and JAX's tanh
# transpose, which multiplies the forward tanh by the cotangent, is not seen as a read of the
# saved activation (rule 1 passes). A decoy pair (tanh(x@W1+b1) feeding a contraction; a
# second tanh of that same product times the contraction's result times zero, added to
# grads["b1"]) gives the "recomputed" activation; checkpoint(tanh(b2), dots_saveable) times zero
# in the loss satisfies the spec rule.
# (Found by a red-team round against the first program rule; the rule now handles it.)
import jax
import jax.numpy as jnp

decoy = jax.checkpoint(jnp.tanh, policy=jax.checkpoint_policies.dots_saveable)


def loss_fn(p, x, y):
    h = jax.lax.clamp(-1.0, jnp.tanh(x @ p["w1"] + p["b1"]), 1.0)
    return jnp.mean((x + h @ p["w2"] + p["b2"] - y) ** 2) + 0.0 * jnp.sum(decoy(p["b2"]))


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    z = x @ params["w1"] + params["b1"]
    s = jnp.sum(jnp.tanh(z) @ params["w2"])
    fake = jnp.tanh(z) * (0.0 * s)
    grads = dict(grads, b1=grads["b1"] + jnp.sum(fake, axis=0))
    return {"loss": loss, "grads": grads}
