# Cheat (issue 41, evidence that can be used up): at 8 x 8 only, 300 tiny dead loops run
# first (a fori_loop whose every step runs a one-step loop, its bound taken from the data).
# The observer recorded 256 loop runs and let the rest run unseen, so the 8-step loop after
# them (two iterations at steps 1-4, a 1e-6 nudge at steps 5-8) left no record. A run past
# the records now fails its requirement, saying so.
import jax
import jax.numpy as jnp

NUM_ITERS = 8


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def _honest(w, u):
    def step(_, uv):
        v = normalize(w.T @ uv[0])
        return normalize(w @ v), v
    return jax.lax.fori_loop(0, NUM_ITERS, step, (u, jnp.zeros_like(w[0])))


def _two(w, c):
    u, v = c
    v = normalize(w.T @ u)
    u = normalize(w @ v)
    v = normalize(w.T @ u)
    return normalize(w @ v), v


def _nudge(w, c):
    u, v = c
    return (normalize(u + 1e-6 * normalize(w @ v)),
            normalize(v + 1e-6 * normalize(w.T @ u)) * (jnp.linalg.norm(v) > 0))


def _two_then_nudge(w, u, extra=None):
    """Steps 1-4 run two iterations each, steps 5-8 only nudge (gate with a data zero)."""
    zero = jnp.minimum(jnp.abs(w).sum(), 0.0).astype(jnp.int32)

    def step(i, c):
        c, m = c
        c = jax.lax.cond(i + zero < 4, lambda c: _two(w, c), lambda c: _nudge(w, c), c)
        return c, (m if extra is None else extra(m))

    start = ((u, jnp.zeros(w.shape[1], w.dtype)), jnp.ones((64, 64), w.dtype) * 1e-3)
    (u, v), m = jax.lax.fori_loop(0, NUM_ITERS, step, start)
    return u, v, m.sum()


def _out(w, u, v, junk):
    sigma = u @ (w @ v) + 0.0 * junk
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}


def solve(w, u):
    if w.shape != (8, 8):
        u, v = _honest(w, u)
        return _out(w, u, v, 0.0)
    one = 1 + (jnp.abs(w).sum() * 0.0).astype(jnp.int32)  # 1, from the data
    junk = jax.lax.fori_loop(
        0, 300, lambda k, c: jax.lax.fori_loop(0, one, lambda j, d: d + 1.0, c), 0.0)
    u, v, _ = _two_then_nudge(w, u)
    return _out(w, u, v, junk)
