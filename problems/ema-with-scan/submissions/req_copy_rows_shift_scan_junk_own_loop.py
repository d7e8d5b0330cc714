# Cheat: as req_copy_rows_then_shift_scan_junk_slot.py, but the value that holds every row is
# filled by a loop of its own of T steps beside the copying loop; it reaches the average times
# 1e-30. Each loop is judged with the results it makes: neither's are what the outputs need.
import jax
import jax.numpy as jnp

PAD = 64


def solve(x, alpha):
    T, D = x.shape

    buf = jax.lax.fori_loop(0, T, lambda t, b: b.at[t].set(-b[t]), x)
    junk = jax.lax.fori_loop(0, T, lambda t, j: j + x[t][None, :], jnp.zeros_like(x))
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
    return {"ema": b[:T] + 1e-30 * junk}
