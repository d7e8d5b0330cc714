# Cheat (red-team round 4 of 2026-12-06): row t is copied into a 3-row buffer at step t (every
# step keeps something) and the average folds three rows at every third step; the switch is a
# counter-indexed gather (`jnp.stack([old, new])[take]`), not a `where`, and work is flat.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    T, D = x.shape

    def upd(s, row):
        return alpha * row + (1 - alpha) * s

    def body(t, c):
        s, buf, out = c
        r = t % 3
        buf = buf.at[r].set(x[t])
        fold = ((r == 2) | (t == T - 1)).astype(jnp.int32)
        cand_s, cand_o = [s], [out]
        for k in range(3):
            i = t - r + k
            take = fold * (k <= r).astype(jnp.int32)
            s = jnp.stack([s, upd(s, buf[k])])[take]
            ii = jnp.clip(i, 0, T - 1)
            out = out.at[ii].set(jnp.stack([out[ii], s])[take])
        return s, buf, out

    _, _, out = jax.lax.fori_loop(0, T, body, (x[0], jnp.zeros((3, D), x.dtype), jnp.zeros_like(x)))
    return {"ema": out}
