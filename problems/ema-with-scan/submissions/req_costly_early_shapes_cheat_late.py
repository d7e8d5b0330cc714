# Cheat (review of issue #30's extra runs): make the shapes watched early costly to watch, so
# that a budget shared by all extra runs is spent before the shape that cheats is reached.
# Honest scan everywhere, plus at T = 16 a dead product of two 128x128 matrices (2 M
# multiply-adds, paid by each of the run's 50 variants: more than all extra runs' 60 M); at
# T = 5 (watched after T = 16) the whole average is computed at the LAST step. Each run has
# its own budget now, a multiple of the reference's work on it (issue 41), so the T = 5 run
# is watched and its idle steps show.
import jax
import jax.numpy as jnp


def _honest(x, alpha):
    def step(m, row):
        m = alpha * row + (1 - alpha) * m
        return m, m
    return jax.lax.scan(step, x[0], x)[1]


def solve(x, alpha):
    T = x.shape[0]
    if T == 16:
        z = jnp.ones((128, 128), x.dtype) * x.sum()
        return {"ema": _honest(x, alpha) + 0.0 * (z @ z).sum()}
    if T != 5:
        return {"ema": _honest(x, alpha)}
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
    return {"ema": out + 0.0 * junk}
