# Fails one-loop-over-time: a T-step fori_loop whose first ceil(T/2) steps each
# do TWO rows (2t and 2t+1, two one-row slices) and whose other steps idle (jnp.where on the
# counter): unroll=2 padded with idle steps to the right count.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    T = x.shape[0]

    def one(ema, out, r):
        row = jax.lax.dynamic_index_in_dim(x, r, keepdims=False)
        ema = jnp.where(r == 0, row, alpha * row + (1 - alpha) * ema)
        return ema, out.at[r].set(ema)

    def body(t, c):
        ema, out = one(*c, 2 * t)
        ema2, out2 = one(ema, out, 2 * t + 1)
        new = jax.tree.map(lambda b, a: jnp.where(2 * t + 1 < T, b, a), (ema2, out2), (ema, out))
        return jax.tree.map(lambda n, o: jnp.where(2 * t < T, n, o), new, c)

    _, out = jax.lax.fori_loop(0, T, body, (jnp.zeros_like(x[0]), jnp.zeros_like(x)))
    return {"ema": out}
