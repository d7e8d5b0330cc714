# A closed form through a cumulative sum: ema_t = (1-alpha)^t (x_0 + alpha sum_{s=1..t} x_s
# (1-alpha)^-s). Exact in real numbers, but (1-alpha)^-s overflows float32 for large alpha over
# long sequences (alpha = 0.9: 10^47) and (1-alpha)^t underflows to 0: inf * 0 = NaN.
import jax.numpy as jnp


def solve(x, alpha):
    keep = 1 - alpha
    s = jnp.arange(x.shape[0], dtype=x.dtype)[:, None]
    scaled = x * keep ** (-s)
    total = x[:1] + alpha * (jnp.cumsum(scaled, axis=0) - scaled[:1])
    return {"ema": keep ** s * total}
