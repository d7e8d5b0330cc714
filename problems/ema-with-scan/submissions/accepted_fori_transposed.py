# Accepted: x transposed to (D, T) before the loop, each step reading the column xt[:, t] (one
# row of x re-laid-out); the outputs are written as columns and transposed back.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    xt = x.T

    def body(t, state):
        out, ema = state
        ema = ema + alpha * (xt[:, t] - ema)
        return out.at[:, t].set(ema), ema

    out, _ = jax.lax.fori_loop(0, x.shape[0], body, (jnp.zeros_like(xt), xt[:, 0]))
    return {"ema": out.T}
