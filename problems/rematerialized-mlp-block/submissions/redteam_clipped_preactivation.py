# Red team (false REJECT of tanh-rematerialized; SHOULD arguably be accepted).
# An honest solution with the block under jax.checkpoint(policy=dots_saveable) inside the
# differentiated loss, whose author clips the pre-activation "for numerical safety" (the
# statement warns values reach ~1e3 and the tanh saturates). tanh(clip(z, -30, 30)) equals
# tanh(z) in float32 and its gradient is the same (tanh' underflows to 0 far below |z| = 30).
# The backward pass does recompute clip and tanh from the saved x·W1, but clip (clamp) is not a
# layout op or the bias add, so the rule finds no tanh "fed by the product" and reports
# "x·W1 is computed but no tanh is applied to it", which the learner cannot make sense of.
# (Found by a red-team round against the first program rule; the rule now handles it.)
import jax
import jax.numpy as jnp


def block(p, x):
    z = jnp.clip(x @ p["w1"] + p["b1"], -30.0, 30.0)
    return x + jnp.tanh(z) @ p["w2"] + p["b2"]


ckpt_block = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(lambda p: jnp.mean((ckpt_block(p, x) - y) ** 2))(params)
    return {"loss": loss, "grads": grads}
