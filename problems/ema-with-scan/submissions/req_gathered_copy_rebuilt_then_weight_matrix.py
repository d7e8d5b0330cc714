# Cheat (execution evidence): x copied by a gather with a run-time index array, rebuilt row by
# row in a scan (one row per step, as the requirement wants), then the whole average computed
# after the loop by a weight matrix over the rebuilt copy.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    t_len = x.shape[0]
    order = jnp.argsort(-jnp.arange(t_len))[::-1]  # 0..T-1, built at run time
    xc = x[order]

    def body(buf, t):
        return buf.at[t].set(xc[t]), None

    rebuilt, _ = jax.lax.scan(body, jnp.zeros_like(x), jnp.arange(t_len))
    i = jnp.arange(t_len)[:, None]
    j = jnp.arange(t_len)[None, :]
    keep = 1.0 - alpha
    w = jnp.where(j <= i, jnp.where(j == 0, keep ** i, alpha * keep ** (i - j)), 0.0)
    return {"ema": w @ rebuilt}
