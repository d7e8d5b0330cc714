# Cheat: as req_copy_rows_then_shift_scan_junk_slot.py (the loop copies rows, the average is
# a fixed shift-and-add scan after it), but the slot that holds every row reaches the average
# times 1e-7 / T: that moves the outputs' last bits (so the slot is not a dead value) and stays
# within the tolerance. Setting it back at the loop's end moves them by under 1e-3 of their size.
import jax
import jax.numpy as jnp

PAD = 64


def solve(x, alpha):
    T, D = x.shape

    def body(t, c):
        buf, junk = c
        row = buf[t]
        buf = buf.at[t].set(-row)
        junk = junk + row[None, :]
        return buf, junk

    buf, junk = jax.lax.fori_loop(0, T, body, (x, jnp.zeros_like(x)))
    held = -buf
    b = jnp.concatenate([held[:1], alpha * held[1:], jnp.zeros((PAD - T, D), x.dtype)])
    a = jnp.concatenate([jnp.zeros((1, D), x.dtype),
                         jnp.broadcast_to(1 - alpha, (PAD - 1, D)).astype(x.dtype)])
    s = 1
    while s < PAD:  # fixed 6 levels, whatever T is
        a_prev = jnp.concatenate([jnp.ones((s, D), x.dtype), a[:-s]])
        b_prev = jnp.concatenate([jnp.zeros((s, D), x.dtype), b[:-s]])
        b = a * b_prev + b
        a = a * a_prev
        s *= 2
    return {"ema": b[:T] + (1e-7 / T) * junk}
