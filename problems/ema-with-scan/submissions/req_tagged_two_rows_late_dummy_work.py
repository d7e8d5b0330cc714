# Cheat (red-team round of 2026-12-06, issue #30): a tag beside the state makes every step 'keep'
# what it reads; the steps whose reads move none of the outputs are idle now.
# Cheat (target 3, at every shape, primary run included): steps 0..T//2-1 fold no row, steps
# T//2.. fold two rows each (inner loop with a data-zero count). Each step adds its own row to
# a tag entry of every carried value (each row first moves the state at its own step; each
# step keeps a change of what it reads), and the early steps run two rows' worth of dummy
# arithmetic on a junk carry that reads no x (no step idle, none crowded).
import jax
import jax.numpy as jnp


def solve(x, alpha):
    T, D = x.shape
    h = T // 2
    zero = (jnp.abs(x).sum() * 0.0).astype(jnp.int32)

    def fold(i, c):
        P, O = c
        p = alpha * x[i] + (1 - alpha) * P[:D]
        return P.at[:D].set(p), O.at[i].set(p)

    def dummy(i, j):
        return alpha * j + (1 - alpha) * j * 0.5

    def body(t, c):
        P, O, J = c
        base = 2 * (t - h)
        n = jnp.where(t >= h, jnp.minimum(2, T - base), 0) + zero
        P, O = jax.lax.fori_loop(base, base + n, fold, (P, O))
        J = jax.lax.fori_loop(0, jnp.where(t >= h, 0, 2) + zero, dummy, J)
        tag = jnp.sum(x[t])
        return P.at[D].add(tag), O.at[T].add(x[t]), J

    P0 = jnp.concatenate([x[0], jnp.zeros((1,), x.dtype)])
    O0 = jnp.zeros((T + 1, D), x.dtype)
    J0 = jnp.ones((D,), x.dtype)
    _, O, J = jax.lax.fori_loop(0, T, body, (P0, O0, J0))
    return {"ema": O[:T] + 0.0 * J[0]}
