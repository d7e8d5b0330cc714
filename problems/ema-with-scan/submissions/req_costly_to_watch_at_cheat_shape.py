# Cheat (red-team round of 2026-12-06, issue #30; a known limit, accepted, until issue 41): at
# T = 5 (an extra run) the whole average is computed at the LAST step, and the same program
# does a dead 160x160 product, so its extra observed run exceeded its share of the shared
# budget and was skipped. Each run now has its own budget from the reference and nothing is
# skipped: the run fails its requirement with the figure.
import jax
import jax.numpy as jnp


def _honest(x, alpha):
    def step(m, row):
        m = alpha * row + (1 - alpha) * m
        return m, m
    return jax.lax.scan(step, x[0], x)[1]


def solve(x, alpha):
    T = x.shape[0]
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
    z = jnp.ones((160, 160), x.dtype) * x.sum()
    return {"ema": out + 0.0 * junk + 0.0 * (z @ z).sum()}
