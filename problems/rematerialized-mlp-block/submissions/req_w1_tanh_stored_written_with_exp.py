# Cheat (red-team round 5 of 2026-12-06, issue #30): the checkpointed block (dots_saveable, tanh
# inside, differentiated) returns the loss's part AND its pre-activation; the tanh inside gets
# stop_gradient on its input, so the checkpoint only serves W2's (and b2's) gradient. W1's and
# b1's gradients come from a side term outside the checkpoint whose value is exactly 0
# (custom_jvp) and whose tangent is (1 - t^2) dz with t = tanh(z) written with exp, computed in
# the FORWARD pass and kept: the tanh for W1's path is stored.
import jax
import jax.numpy as jnp

sg = jax.lax.stop_gradient


@jax.custom_jvp
def zero_with_tanh_slope(z):
    return jnp.zeros_like(z)


@zero_with_tanh_slope.defjvp
def _jvp(primals, tangents):
    (z,), (dz,) = primals, tangents
    t = 1.0 - 2.0 / (jnp.exp(2.0 * jnp.clip(z, -40.0, 40.0)) + 1.0)
    return jnp.zeros_like(z), dz * (1.0 - t * t)


def _block(w1, b1, w2, x):
    pre = x @ w1 + b1
    return jnp.tanh(sg(pre)) @ w2, pre


_ck = jax.checkpoint(_block, policy=jax.checkpoint_policies.dots_saveable)


def _loss(params, x, y):
    w1, b1, w2, b2 = params["w1"], params["b1"], params["w2"], params["b2"]
    main, pre = _ck(w1, b1, w2, x)
    side = zero_with_tanh_slope(pre) @ sg(w2)
    out = x + main + side + b2
    return jnp.mean((out - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(_loss)(params, x, y)
    return {"loss": loss, "grads": grads}
