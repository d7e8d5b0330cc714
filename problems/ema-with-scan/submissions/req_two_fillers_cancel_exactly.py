# Cheat (red-team round 3 of 2026-12-06): the loop copies the rows and carries two fillers,
# j1 += row and j2 -= row, so j1 + j2 is exactly 0; the average is a shift-and-add scan after
# the loop, plus j1 + j2. Each filler set back alone moves the outputs; with the copy kept
# alone (both fillers set back) they are unchanged, so the copy is all they take from the loop.
import jax
import jax.numpy as jnp

PAD = 64


def _shift_scan(held, alpha):
    T, D = held.shape
    b = jnp.concatenate([held[:1], alpha * held[1:], jnp.zeros((PAD - T, D), held.dtype)])
    a = jnp.concatenate([jnp.zeros((1, D), held.dtype),
                         jnp.broadcast_to(1 - alpha, (PAD - 1, D)).astype(held.dtype)])
    s = 1
    while s < PAD:
        a_prev = jnp.concatenate([jnp.ones((s, D), held.dtype), a[:-s]])
        b_prev = jnp.concatenate([jnp.zeros((s, D), held.dtype), b[:-s]])
        b = a * b_prev + b
        a = a * a_prev
        s *= 2
    return b[:T]


def solve(x, alpha):
    T, D = x.shape

    def body(t, c):
        j1, buf, j2 = c
        row = buf[t]
        buf = buf.at[t].set(-row)
        return j1 + row[None, :], buf, j2 - row[None, :]

    j1, buf, j2 = jax.lax.fori_loop(0, T, body, (jnp.zeros_like(x), x, jnp.zeros_like(x)))
    held = -buf
    return {"ema": _shift_scan(held, alpha) + (j1 + j2)}
