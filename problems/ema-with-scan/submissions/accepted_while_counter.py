# lax.while_loop with an explicit counter: t = 0, 1, ..., T-1 (condition t < T, t += 1).
import jax
import jax.numpy as jnp


def solve(x, alpha):
    def body(state):
        t, ema, out = state
        ema = alpha * x[t] + (1 - alpha) * ema
        return t + 1, ema, out.at[t].set(ema)

    _, _, out = jax.lax.while_loop(lambda s: s[0] < x.shape[0], body,
                                   (jnp.int32(0), x[0], jnp.zeros_like(x)))
    return {"ema": out}
