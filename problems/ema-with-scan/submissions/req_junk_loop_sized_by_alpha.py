# Cheat (issue 41, evidence that can be used up; invented): the junk's size comes from the
# data, not the shape. Honest at T = 48; elsewhere a dead while loop runs
# 100 + int(alpha * 1,000) steps over a 64x64 array before a loop whose last step runs the
# whole average.
# Costly on every test with a large alpha, cheap on the others: under a shared budget the
# runs on costly tests were skipped. Each run now has its own budget from the reference.
import jax
import jax.numpy as jnp


def _honest(x, alpha):
    def step(m, row):
        m = alpha * row + (1 - alpha) * m
        return m, m
    return jax.lax.scan(step, x[0], x)[1]


def _all_at_last_step(x, alpha):
    """A T-step loop whose last step runs an inner loop over every row (its count gated with
    a data zero), the other steps idle."""
    T = x.shape[0]
    zero = (jnp.abs(x).sum() * 0.0).astype(jnp.int32)

    def inner(i, c):
        prev, out = c
        cur = alpha * x[i] + (1 - alpha) * prev
        return cur, out.at[i].set(cur)

    def body(t, c):
        prev, out, junk = c
        prev, out = jax.lax.fori_loop(0, jnp.where(t == T - 1, T, 0) + zero, inner, (prev, out))
        return prev, out, junk + x[t]

    _, out, junk = jax.lax.fori_loop(0, T, body, (x[0], jnp.zeros_like(x), jnp.zeros_like(x)))
    return out + 0.0 * junk


def solve(x, alpha):
    t_len = x.shape[0]
    if t_len == 48:
        return {"ema": _honest(x, alpha)}
    steps = 100 + (alpha * 1000.0).astype(jnp.int32)
    z = jnp.ones((64, 64), x.dtype) * (x.sum() * 1e-3)
    junk = jax.lax.fori_loop(0, steps, lambda k, m: jnp.tanh(m * 1.5 + 0.1), z).sum()
    return {"ema": _all_at_last_step(x, alpha) + 0.0 * junk}
