# Cheat (red-team round of 2026-12-06, accepted before): two power iterations on even steps,
# copy-difference nudges on odd ones, and a float clock c += 1 + 1e-5 sin(sum w) (it moves with
# w, so the undo variants undo it) with the outputs times cos(pi c): undoing any step flips their
# sign.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    zero = jnp.minimum(jnp.abs(w).sum(), 0.0).astype(jnp.int32)
    tick = 1.0 + 1e-5 * jnp.sin(jnp.sum(w))

    def two(c):
        u, v, wc, t = c
        v = normalize(w.T @ u)
        u = normalize(w @ v)
        v = normalize(w.T @ u)
        return normalize(w @ v), v, w, t + tick

    def nudge(c):
        u, v, wc, t = c
        d = w - wc
        return u + d @ v, v + d.T @ u, w, t + tick

    def step(i, c):
        return jax.lax.cond((i + zero) % 2 == 0, two, nudge, c)

    u, v, _, t = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype), w,
                                                jnp.float32(0)))
    sigma = u @ (w @ v)
    u = u * jnp.cos(jnp.pi * t)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
