# Red team (false accept of tanh-rematerialized; SHOULD be requirement_failed, both requirements).
# No rematerialization: the block is differentiated without any checkpoint, so the backward pass
# reads the stored forward tanh. The program rule only recognises a "product" when both dot
# operands are *values* of x and params["w1"] through layout ops (pass_transfer); `w1 * 1.0` is
# a multiply, so the real block's x·W1 is no product and its tanh is never analysed (rule 1 never
# sees the saved read). A decoy pair on a separate x@W1 (a tanh feeding a contraction, and a
# second tanh of the same product multiplied by that contraction's result times zero) reaches
# grads["b1"] and satisfies "R read against F, same product, R only in the gradients". The
# decoy checkpoint(tanh(b2), dots_saveable) in the loss satisfies the spec rule.
# (Found by a red-team round against the first program rule; the rule now handles it.)
import jax
import jax.numpy as jnp

decoy = jax.checkpoint(jnp.tanh, policy=jax.checkpoint_policies.dots_saveable)


def loss_fn(p, x, y):
    h = jnp.tanh(x @ (p["w1"] * 1.0) + p["b1"])
    return jnp.mean((x + h @ p["w2"] + p["b2"] - y) ** 2) + 0.0 * jnp.sum(decoy(p["b2"]))


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    z = x @ params["w1"] + params["b1"]
    s = jnp.sum(jnp.tanh(z) @ params["w2"])
    fake = jnp.tanh(z) * (0.0 * s)
    grads = dict(grads, b1=grads["b1"] + jnp.sum(fake, axis=0))
    return {"loss": loss, "grads": grads}
