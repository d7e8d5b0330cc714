# Cheat (issue #30): a scan that copies each row of x into a complex64 buffer (its real part),
# and the weight matrix applied to the buffer's real part after the loop: a product over all of
# x at once, through a round trip through complex numbers.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    T, D = x.shape

    def step(buf, t):
        return buf.at[t].set(x[t].astype(jnp.complex64)), None

    buf, _ = jax.lax.scan(step, jnp.zeros((T, D), jnp.complex64), jnp.arange(T))
    t = jnp.arange(T)
    k = t[:, None] - t[None, :]
    w = jnp.where(k >= 0, alpha * (1 - alpha) ** jnp.maximum(k, 0), 0.0)
    w = w.at[:, 0].set(jnp.where(t >= 0, (1 - alpha) ** t, 0.0))
    return {"ema": (w @ jnp.real(buf)).astype(x.dtype)}
