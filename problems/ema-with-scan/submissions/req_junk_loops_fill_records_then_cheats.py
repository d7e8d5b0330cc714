# Cheat (issue 41, evidence that can be used up): honest but at T = 16, where 300 tiny dead
# loops run first (a fori_loop whose every step runs a one-step loop of its own, its bound
# taken from the data so that it stays a loop). The observer recorded 256 loop runs and let
# the rest run unseen: the loop after them, whose last step runs the whole average,
# left no record. A run past the records now fails, saying so.
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
    if t_len != 16:
        return {"ema": _honest(x, alpha)}
    one = 1 + (jnp.abs(x).sum() * 0.0).astype(jnp.int32)  # 1, from the data
    junk = jax.lax.fori_loop(
        0, 300, lambda k, c: jax.lax.fori_loop(0, one, lambda j, d: d + 1.0, c), 0.0)
    return {"ema": _all_at_last_step(x, alpha) + 0.0 * junk}
