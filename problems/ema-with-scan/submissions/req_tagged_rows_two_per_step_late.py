# Cheat (red-team round of 2026-12-05, issue #30): each step's row tagged into the state, idle steps then two rows per step: the idle steps execute no arithmetic.
# Cheat: steps 0..T/2-1 average no row, steps T/2..T-1 average two rows each (inner loop with a
# data-zero count). Every carried array gets an extra "tag" row that adds x[t] at step t, so each
# row of x first moves every carried value at its own step (hides the crowding from the observer).
import jax
import jax.numpy as jnp


def solve(x, alpha):
    T, D = x.shape
    h = T // 2
    zero = (jnp.abs(x).sum() * 0.0).astype(jnp.int32)

    def inner(i, c):
        P, out = c
        cur = alpha * x[i] + (1 - alpha) * P[0]
        return P.at[0].set(cur), out.at[i].set(cur)

    def body(t, c):
        P, out = c
        base = 2 * (t - h)
        n = jnp.where(t >= h, jnp.minimum(2, T - base), 0) + zero
        P, out = jax.lax.fori_loop(base, base + n, inner, (P, out))
        return P.at[1].add(x[t]), out.at[T].add(x[t])

    P0 = jnp.stack([x[0], jnp.zeros_like(x[0])])
    _, out = jax.lax.fori_loop(0, T, body, (P0, jnp.zeros((T + 1, D), x.dtype)))
    return {"ema": out[:T]}
