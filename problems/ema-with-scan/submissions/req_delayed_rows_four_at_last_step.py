# Cheat (red-team round 4 of 2026-12-06): step t folds row t - 3, and the last step folds four
# rows at once; every step computes all four updates (counter-selected).
import jax
import jax.numpy as jnp


def solve(x, alpha):
    T, D = x.shape

    def upd(s, row):
        return alpha * row + (1 - alpha) * s

    def body(t, c):
        s, out = c
        j = jnp.maximum(t - 3, 0)
        s = upd(s, x[j])
        out = out.at[j].set(s)
        last = t == T - 1
        for k in (1, 2, 3):
            i = jnp.minimum(j + k, T - 1)
            ok = last & (j + k < T)
            s = jnp.where(ok, upd(s, x[i]), s)
            out = jnp.where(ok, out.at[i].set(s), out)
        return s, out

    _, out = jax.lax.fori_loop(0, T, body, (x[0], jnp.zeros_like(x)))
    return {"ema": out}
