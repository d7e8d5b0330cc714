# Fails one-loop-over-time: a T-step fori_loop whose FIRST step (lax.cond on
# t == 0) computes the whole average with an inner scan over x[1:] (T-1 steps, reading rows),
# and whose other steps pass it along: all the work at one step, the statement's "first step
# computes the whole average" case with the weight matrix swapped for an inner scan.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    def tail():
        step = lambda m, row: (alpha * row + (1 - alpha) * m,) * 2
        _, rest = jax.lax.scan(step, x[0], x[1:])
        return jnp.concatenate([x[:1], rest])

    body = lambda t, out: jax.lax.cond(t == 0, lambda: tail() + 1e-30 * out, lambda: out)
    return {"ema": jax.lax.fori_loop(0, x.shape[0], body, jnp.zeros_like(x))}
