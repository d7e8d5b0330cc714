# Cheat (execution evidence): a fori_loop whose step 0 computes the whole average with a
# weight matrix, and whose gate mixes the counter with a data zero (min(|x|, 0)), so the text
# analysis cannot run it: steps 2..T keep the buffer as it was.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    t_len = x.shape[0]
    zero = jnp.minimum(jnp.abs(x).sum(), 0.0)  # always 0, but computed from x
    i = jnp.arange(t_len)[:, None]
    j = jnp.arange(t_len)[None, :]
    keep = 1.0 - alpha
    w = jnp.where(j == 0, keep ** i, alpha * keep ** (i - j))
    w = jnp.where(j <= i, w, 0.0)

    def body(t, buf):
        g = (t == 0).astype(x.dtype) + zero
        return g * (w @ x) + (1.0 - g) * buf

    return {"ema": jax.lax.fori_loop(0, t_len, body, jnp.zeros_like(x))}
