# Accepted (red team, 2026-12-06; rejected until 2026-12-07): one fori_loop over the T rows,
# and inside each step a fori_loop over the D channels updating one average at a time. It is
# ~12x the reference's observed work (many small ops), past the fixed 60 M per run the judge
# had; a run's budget is now only a multiple of the reference's figure on the same run.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    T, D = x.shape

    def row(t, c):
        m, out = c

        def chan(d, mm):
            return mm.at[d].set(alpha * x[t, d] + (1 - alpha) * mm[d])

        m = jax.lax.fori_loop(0, D, chan, m)
        return m, out.at[t].set(m)

    _, out = jax.lax.fori_loop(0, T, row, (x[0], jnp.zeros_like(x)))
    return {"ema": out}
