"""Right numbers, but n - 1 rows of the Hessian are built: every row but the last, written out
by hand as an (n - 1) x n array (one row short of n x n), with the last entry of H v computed
on its own. The bound is 4n, not n*n - 1: this block fails it for every n."""

import jax
import jax.numpy as jnp


def solve(w, v, s, lam):
    n = w.shape[0]
    p = jax.nn.softmax(s * w)
    sp = s * p
    top = -(sp[:-1, None] * sp[None, :])  # (n - 1, n): rows 0 .. n - 2
    idx = jnp.arange(n - 1)
    top = top.at[idx, idx].add(s[:-1] * sp[:-1] + lam)  # their diagonal entries
    last = s[-1] * sp[-1] * v[-1] - sp[-1] * jnp.dot(sp, v) + lam * v[-1]
    return {"hv": jnp.concatenate([top @ v, last[None]])}
