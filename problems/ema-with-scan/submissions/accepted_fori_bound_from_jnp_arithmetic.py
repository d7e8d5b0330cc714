# Honest (issue 41): a fori_loop whose bound is computed with jnp arithmetic on the shape
# (the number of rows as x.size // D in int32, not a Python int), writing row t of the output
# at each step.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    num_rows = jnp.int32(x.size) // jnp.int32(x.shape[1])

    def body(t, state):
        out, ema = state
        ema = alpha * x[t] + (1 - alpha) * ema
        return out.at[t].set(ema), ema

    out, _ = jax.lax.fori_loop(0, num_rows, body, (jnp.zeros_like(x), x[0]))
    return {"ema": out}
