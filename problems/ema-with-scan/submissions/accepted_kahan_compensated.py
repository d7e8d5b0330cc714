# Accepted (red-team round 3 of 2026-12-06): a compensated (Kahan) update carrying (ema, comp).
# comp's rounding residue can come out the same at a row's own step, so the row shows one step
# late there: shares may show up to two steps after their own.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    def step(c, row):
        ema, comp = c
        delta = alpha * (row - ema) - comp
        new = ema + delta
        comp = (new - ema) - delta
        return (new, comp), new

    _, out = jax.lax.scan(step, (x[0], jnp.zeros_like(x[0])), x)
    return {"ema": out}
