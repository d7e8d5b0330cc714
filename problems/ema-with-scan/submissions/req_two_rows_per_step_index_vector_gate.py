# Cheat (issue #30, index-vector gates): a T-step fori_loop whose first ceil(T/2) steps each do
# TWO rows and whose other steps idle, the gates built from index vectors (jnp.any of the two
# rows' indices being below T; the second row kept where jnp.all of them is), not from the
# counter alone. The grader runs such gates step by step like the counter itself.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    T = x.shape[0]

    def one(ema, out, r):
        row = jax.lax.dynamic_index_in_dim(x, r, keepdims=False)
        ema = jnp.where(r == 0, row, alpha * row + (1 - alpha) * ema)
        return ema, out.at[r].set(ema)

    def body(t, c):
        rows = 2 * t + jnp.arange(2)
        ema, out = one(*c, 2 * t)
        ema2, out2 = one(ema, out, 2 * t + 1)
        both = jnp.all(rows < T)
        new = jax.tree.map(lambda b, a: jnp.where(both, b, a), (ema2, out2), (ema, out))
        return jax.tree.map(lambda n, o: jnp.where(jnp.any(rows < T), n, o), new, c)

    _, out = jax.lax.fori_loop(0, T, body, (jnp.zeros_like(x[0]), jnp.zeros_like(x)))
    return {"ema": out}
