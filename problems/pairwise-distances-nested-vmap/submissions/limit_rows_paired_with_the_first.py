# Known limit, accepted today (red-team round 6 of 2026-12-06, issue #30): a Python loop over the points of x, one at a time (15 iterations whatever N: point
# min(i, N-1)), each computed in a (2, D) stack with point 0 tagged along: every op moves with
# {0, i}, so no op moves with one point alone and the sets all overlap (no disjoint chunks).
import jax
import jax.numpy as jnp
N_MAX = 16
def solve(x, y):
    N = x.shape[0]
    yy = jnp.sum(y * y, axis=1)
    rows, dead = [], []
    for i in range(1, N_MAX):
        j = min(i, N - 1)
        p = jnp.stack([x[0], x[j]])
        d2p = jnp.maximum(jnp.sum(p * p, axis=1)[:, None] + yy[None, :] - 2 * (p @ y.T), 0)
        if i == 1:
            rows.append(d2p[0])
        if i < N:
            rows.append(d2p[1])
        else:
            dead.append(jnp.sum(d2p))
    d2 = jnp.stack(rows)
    if dead:
        d2 = d2 + 0.0 * sum(dead)
    return {"d2": d2, "d": jnp.sqrt(d2)}
