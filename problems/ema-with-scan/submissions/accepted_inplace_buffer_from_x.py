# Honest (red-team round of 2026-12-06, rejected before): the output buffer starts as a copy of x
# and step t overwrites row t with the average from row t - 1 of the buffer (row 0 kept at t ==
# 0). x reaches the loop as its carried start, not as a closed-over value.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    T = x.shape[0]

    def body(t, out):
        prev = out[jnp.maximum(t - 1, 0)]
        m = jnp.where(t == 0, out[t], alpha * out[t] + (1 - alpha) * prev)
        return out.at[t].set(m)

    return {"ema": jax.lax.fori_loop(0, T, body, x)}
