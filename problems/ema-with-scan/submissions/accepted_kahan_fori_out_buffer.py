# Accepted (red-team round 4 of 2026-12-06): a compensated (Kahan) average in a fori_loop that
# writes out.at[t], the residual carried beside it.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    def body(t, c):
        ema, comp, out = c
        delta = alpha * (x[t] - ema) - comp
        new = ema + delta
        comp = (new - ema) - delta
        return new, comp, out.at[t].set(new)

    _, _, out = jax.lax.fori_loop(0, x.shape[0], body, (x[0], jnp.zeros_like(x[0]), jnp.zeros_like(x)))
    return {"ema": out}
