# Like accepted_stacked_directions.py, but the (2, n) stack of directions (v, -v) is built as
# concatenate([v, -v]).reshape(2, n) and walked with a 2-step lax.map: the loop runs over the
# 2 directions (the reshape's outer part), every step takes all n coordinates.
import jax
import jax.numpy as jnp


def f(w, s, lam):
    return jax.nn.logsumexp(s * w) + 0.5 * lam * jnp.dot(w, w)


def solve(w, v, s, lam):
    grad = jax.grad(lambda u: f(u, s, lam))
    dirs = jnp.concatenate([v, -v]).reshape(2, w.shape[0])
    hvs = jax.lax.map(lambda d: jax.jvp(grad, (w,), (d,))[1], dirs)
    return {"hv": 0.5 * (hvs[0] - hvs[1])}
