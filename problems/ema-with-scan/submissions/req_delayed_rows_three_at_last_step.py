# Cheat (red-team round 4 of 2026-12-06): step t folds row t - 2, and the last step folds rows
# T - 3 .. T - 1 at once; every step computes the same three updates, chosen by a counter
# `where`, so work is flat. On a first test no step may take up more than the one allowed pair.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    T, D = x.shape

    def upd(s, row):
        return alpha * row + (1 - alpha) * s

    def body(t, c):
        s, out = c
        j = jnp.maximum(t - 2, 0)
        s = upd(s, x[j])
        out = out.at[j].set(s)
        last = t == T - 1
        s2 = jnp.where(j + 1 < T, upd(s, x[jnp.minimum(j + 1, T - 1)]), s)
        s3 = jnp.where(j + 2 < T, upd(s2, x[jnp.minimum(j + 2, T - 1)]), s2)
        out = jnp.where(last, out.at[jnp.minimum(j + 1, T - 1)].set(s2), out)
        out = jnp.where(last & (j + 2 >= T), out.at[T - 1].set(s2), out)
        out = jnp.where(last, out.at[jnp.minimum(j + 2, T - 1)].set(s3), out)
        s = jnp.where(last, s3, s)
        return s, out

    _, out = jax.lax.fori_loop(0, T, body, (x[0], jnp.zeros_like(x)))
    return {"ema": out}
