# Cheat (red-team round 6 of 2026-12-06, issue #30): req_w2_stored_copy_times_recomputed_ratio with the global recomputed factor k computed
# from every element of the tanh but the first: the locality probe only changes the first element.
# Cheat (red-team round 5 of 2026-12-06, issue #30): W2's gradient reads a STORED copy of the
# tanh: hs, tanh written with exp, computed in the forward pass outside the checkpoint from the
# (one) product x @ W1. The dots_saveable checkpoint (tanh inside, differentiated) computes the
# loss's tanh(pre) @ stop_gradient(W2) (W1/b1's gradients: the tanh is honestly recomputed) plus
# u * k, where u is exactly 0 with tangent hs @ dW2 (custom_jvp) and k = (1 + sum(tanh(pre)^2))
# / (1 + sum(exp_tanh(pre)^2)) is a stop_gradient scalar equal to 1 recomputed in the backward.
# So W2's gradient is hs^T (k g): changing the recomputed tanh scales it wholly, but all of its
# values come from the stored hs.
import jax
import jax.numpy as jnp

sg = jax.lax.stop_gradient


def _exp_tanh(z):
    return 1.0 - 2.0 / (jnp.exp(2.0 * jnp.clip(z, -40.0, 40.0)) + 1.0)


@jax.custom_jvp
def _zero_times(w2, hs):
    return jnp.zeros((hs.shape[0], w2.shape[1]), w2.dtype)


@_zero_times.defjvp
def _zero_times_jvp(primals, tangents):
    w2, hs = primals
    dw2, _ = tangents
    return _zero_times(w2, hs), hs @ dw2


def _block(pre, w2, u):
    h = jnp.tanh(pre)
    k = sg((1.0 + jnp.sum((h * h).reshape(-1)[1:])) / (1.0 + jnp.sum((_exp_tanh(pre) ** 2).reshape(-1)[1:])))
    return h @ sg(w2) + u * k


_ck = jax.checkpoint(_block, policy=jax.checkpoint_policies.dots_saveable)


def _loss(params, x, y):
    w1, b1, w2, b2 = params["w1"], params["b1"], params["w2"], params["b2"]
    pre = x @ w1 + b1
    hs = sg(_exp_tanh(pre))
    u = _zero_times(w2, hs)
    out = x + _ck(pre, w2, u) + b2
    return jnp.mean((out - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(_loss)(params, x, y)
    return {"loss": loss, "grads": grads}
