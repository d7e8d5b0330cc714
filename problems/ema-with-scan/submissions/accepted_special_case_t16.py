# Honest, with a special case for one length: at T = 16 the scan also carries a step counter
# (a learner's debugging leftover), so that program differs from the others. It is still one
# T-step loop carrying the average, and it does not grow with T.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    def step(ema, row):
        ema = alpha * row + (1 - alpha) * ema
        return ema, ema

    if x.shape[0] == 16:
        def counted(carry, row):
            ema, n = carry
            ema, out = step(ema, row)
            return (ema, n + 1), out

        _, out = jax.lax.scan(counted, (x[0], jnp.int32(0)), x)
        return {"ema": out}
    _, out = jax.lax.scan(step, x[0], x)
    return {"ema": out}
