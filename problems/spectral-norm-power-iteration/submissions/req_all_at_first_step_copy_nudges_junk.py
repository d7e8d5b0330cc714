# Cheat (red-team round of 2026-12-06, accepted before): all 8 power iterations at step 1, at
# every shape; steps 2-8 only nudge u and v by (w - wc), wc a carried copy of w (zero in every
# real run), and every step runs 4 thrown-away iterations on a junk vector so that step 1's work
# stays under 3x the median. Every middle step's undoing moves the outputs by 0, so no step stood
# above the floor; the tests named in steps_matter_on show it.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def it(w, u):
    v = normalize(w.T @ u)
    return normalize(w @ v), v


def solve(w, u):
    zero = jnp.minimum(jnp.abs(w).sum(), 0.0).astype(jnp.int32)

    def all8(c):
        u, v = c
        for _ in range(8):
            u, v = it(w, u)
        return u, v

    def step(i, c):
        u, v, wc, j = c
        d = w - wc
        u, v = u + d @ v, v + d.T @ u
        u, v = jax.lax.cond((i + zero) % 8 == 0, all8, lambda c: c, (u, v))
        for _ in range(4):
            j, _v = it(w, j)
        return u, v, w, j

    u, v, _, j = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype), w,
                                                jnp.ones(w.shape[0], w.dtype)))
    sigma = u @ (w @ v) + 0.0 * j[0]  # keeps the junk from being dropped (DCE)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
