# Cheat (red-team round 3 of 2026-12-06): the loop carries three idle values, then a copy of the
# rows and a filler that adds every row to every row (reaching the average times 1e-30); the
# average is a shift-and-add scan after the loop. Knockout parts go to the values that moved
# most, so the filler is a part of its own, not one with the copy.
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
        d1, d2, d3, buf, junk = c
        row = buf[t]
        buf = buf.at[t].set(-row)
        junk = junk + row[None, :]
        return d1 + 1.0, d2 * 0.5, d3 - 1.0, buf, junk

    z = jnp.zeros((), x.dtype)
    d1, d2, d3, buf, junk = jax.lax.fori_loop(0, T, body, (z, z + 1.0, z, x, jnp.zeros_like(x)))
    held = -buf
    return {"ema": _shift_scan(held, alpha) + 1e-30 * junk + 1e-30 * (d1 + d2 + d3)}
