# Cheat (issue #30, a form of red-team round 5's halves): a fori_loop over the coordinates
# (padded to 65 steps) whose carry holds the previous step's Hessian column: each column, picked by a
# one-hot tangent, is added half at its own step and half at the next. A loop over the
# coordinates.
import jax
import jax.numpy as jnp

N_MAX = 64


def loss(w, s, lam):
    return jax.nn.logsumexp(s * w) + 0.5 * lam * jnp.sum(w * w)


def solve(w, v, s, lam):
    n = w.shape[0]
    grad = jax.grad(loss)

    def column(i):
        e = (jnp.arange(n) == i).astype(w.dtype)
        return jax.jvp(lambda u: grad(u, s, lam), (w,), (e,))[1] * jnp.sum(e * v)

    def step(t, carry):
        acc, prev = carry
        col = column(t)
        return acc + 0.5 * col + 0.5 * prev, col

    acc, _ = jax.lax.fori_loop(0, N_MAX + 1, step, (jnp.zeros_like(w), jnp.zeros_like(w)))
    return {"hv": acc}
