# Cheat (execution evidence): x round-tripped through complex numbers, then two rows per step
# for the first half of the steps and idle steps after, under a flag computed from data.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    t_len = x.shape[0]
    xc = jnp.real((x + 0j) * jnp.exp(1j * jnp.zeros_like(x)))
    flag0 = jnp.abs(x).sum() >= 0  # always true, but from data
    keep = 1.0 - alpha

    def body(carry, t):
        prev, out, on = carry
        a = 2 * t
        r0 = xc[jnp.minimum(a, t_len - 1)]
        r1 = xc[jnp.minimum(a + 1, t_len - 1)]
        e0 = jnp.where(a == 0, r0, alpha * r0 + keep * prev)
        e1 = alpha * r1 + keep * e0
        live = on & (a < t_len)
        out = jnp.where(live, out.at[jnp.minimum(a, t_len - 1)].set(e0), out)
        out = jnp.where(live & (a + 1 < t_len), out.at[jnp.minimum(a + 1, t_len - 1)].set(e1),
                        out)
        prev = jnp.where(live, jnp.where(a + 1 < t_len, e1, e0), prev)
        return (prev, out, on), None

    (_, out, _), _ = jax.lax.scan(body, (x[0], jnp.zeros_like(x), flag0), jnp.arange(t_len))
    return {"ema": out}
