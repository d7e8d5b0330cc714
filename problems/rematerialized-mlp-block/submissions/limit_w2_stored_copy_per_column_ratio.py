# Known limit, accepted today (red-team round 6 of 2026-12-06, issue #30): W2's gradient from a
# stored copy times a factor per hidden column recomputed from the tanh: one element moves one row,
# as the honest h^T g does.
import jax
import jax.numpy as jnp

sg = jax.lax.stop_gradient


def _exp_tanh(z):
    return 1.0 - 2.0 / (jnp.exp(2.0 * jnp.clip(z, -40.0, 40.0)) + 1.0)


@jax.custom_jvp
def _zero_times(w2, hsk):
    return jnp.zeros((hsk.shape[0], w2.shape[1]), w2.dtype)


@_zero_times.defjvp
def _zero_times_jvp(primals, tangents):
    w2, hsk = primals
    dw2, _ = tangents
    return _zero_times(w2, hsk), hsk @ dw2


def _block(pre, w2, hs):
    h = jnp.tanh(pre)
    k = sg((1.0 + jnp.sum(h * h, axis=0)) / (1.0 + jnp.sum(_exp_tanh(pre) ** 2, axis=0)))
    return h @ sg(w2) + _zero_times(w2, hs * k)


_ck = jax.checkpoint(_block, policy=jax.checkpoint_policies.dots_saveable)


def _loss(params, x, y):
    w1, b1, w2, b2 = params["w1"], params["b1"], params["w2"], params["b2"]
    pre = x @ w1 + b1
    hs = sg(_exp_tanh(pre))
    out = x + _ck(pre, w2, hs) + b2
    return jnp.mean((out - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(_loss)(params, x, y)
    return {"loss": loss, "grads": grads}
