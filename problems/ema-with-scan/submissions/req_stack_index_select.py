# Two rows per step for the first ceil(T/2) steps, then the carry passed along: like
# submissions/req_two_rows_per_step_then_idle.py, but the choice between the new and the old
# carry is made by indexing a stack, jnp.stack([old, new])[(2t < T) * 1] (a dynamic slice on the
# counter, no select). Should be requirement_failed.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    T = x.shape[0]

    def one(ema, out, r):
        row = jax.lax.dynamic_index_in_dim(x, r, keepdims=False)
        ema = jnp.where(r == 0, row, alpha * row + (1 - alpha) * ema)
        return ema, out.at[r].set(ema)

    def pick(old, new, ok):
        return jax.tree.map(lambda a, b: jnp.stack([a, b])[ok.astype(jnp.int32)], old, new)

    def body(t, c):
        one_ = one(*c, 2 * t)
        two = one(*one_, 2 * t + 1)
        new = pick(one_, two, 2 * t + 1 < T)
        return pick(c, new, 2 * t < T)

    _, out = jax.lax.fori_loop(0, T, body, (jnp.zeros_like(x[0]), jnp.zeros_like(x)))
    return {"ema": out}
