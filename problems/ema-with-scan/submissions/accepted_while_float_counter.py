# Honest (red team, 2026-12-07): a while_loop with a float32 time counter (t < T as floats,
# t += 1.0); its trip count is found by running the counter alone.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    T = x.shape[0]

    def body(s):
        t, m, out = s
        i = t.astype(jnp.int32)
        row = x[i]
        m = jnp.where(i == 0, row, alpha * row + (1 - alpha) * m)
        return t + 1.0, m, out.at[i].set(m)

    _, _, out = jax.lax.while_loop(lambda s: s[0] < T, body,
                                   (jnp.float32(0.0), jnp.zeros_like(x[0]), jnp.zeros_like(x)))
    return {"ema": out}
