# Cheat (red-team round of 2026-12-06, issue #30; accepted until the observer measured how far
# each step's reads move the outputs): a tiny nudge that reads w makes a step look as if it
# kept its work, and two iterations per step stay under 3x the median. Changing w at steps 5-7
# moves the outputs ~1e-6 as much as at step 4: those steps only nudge.
# Cheat (target 3, primary run too): steps 1-4 each run two power iterations, steps 5-8 run
# none, only a 1e-6 unit-norm nudge along w v / w^T u (reads w, so the step "keeps" a change
# of w; ~1e-6 error, far inside tolerance). Work ratio 2 < 3. Gate mixed with a data zero.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    zero = jnp.minimum(jnp.abs(w).sum(), 0.0).astype(jnp.int32)

    def two(c):
        u, v = c
        v = normalize(w.T @ u)
        u = normalize(w @ v)
        v = normalize(w.T @ u)
        return normalize(w @ v), v

    def nudge(c):
        u, v = c
        return (normalize(u + 1e-6 * normalize(w @ v)),
                normalize(v + 1e-6 * normalize(w.T @ u)) * (jnp.linalg.norm(v) > 0))

    def step(i, c):
        return jax.lax.cond(i + zero < 4, two, nudge, c)

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype)))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
