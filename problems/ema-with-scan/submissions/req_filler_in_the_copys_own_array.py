# Cheat, a known limit until issue 41's trajectory runs (red-team round 3 of 2026-12-06): one
# carried (T, 2D) array holds the copied rows in its first D columns and a filler of every row in the others.
# Knockouts set whole carried values back: the outputs need the array, so the filler counts.
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

    def body(t, z):
        row = x[t]
        z = z.at[t, :D].set(row + 1e-30 * z[t, D:])
        z = z.at[:, D:].add(row[None, :])
        return z

    z = jax.lax.fori_loop(0, T, body, jnp.zeros((T, 2 * D), x.dtype))
    return {"ema": _shift_scan(z[:, :D], alpha) + 1e-30 * z[:, D:]}
