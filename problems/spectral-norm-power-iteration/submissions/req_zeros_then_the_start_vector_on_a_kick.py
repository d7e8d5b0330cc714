# Cheat (red team, 2026-12-07; fails by the restart): u is zero until the loop's last step, which runs all 8 iterations from the start
# vector a (carried, with a twin b). No honest path at all: when a and b differ (a kick) the
# program just hands out a itself before the last step. The readout is then nonzero and off
# the loop's own answers; the restart from it answers zeros (stopped before the last step),
# and a zero row "tells no step apart", so it counts as going on as the kicked run did.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def all8(w, u):
    v = jnp.zeros(w.shape[1], w.dtype)
    for _ in range(8):
        v = normalize(w.T @ u)
        u = normalize(w @ v)
    return u, v


def solve(w, u0):
    M, N = w.shape

    def step(i, c):
        a, b, u, v = c
        u, v = jax.lax.cond(i == 7, lambda: all8(w, a), lambda: (u, v))
        nudge = 1e-30 * (w @ (w.T @ a))
        return a + nudge, b + nudge, u, v

    init = (u0, u0, jnp.zeros(M, w.dtype), jnp.zeros(N, w.dtype))
    a, b, u, v = jax.lax.fori_loop(0, 8, step, init)
    kicked = jnp.any(a != b) & ~jnp.any(u != 0)
    u = jnp.where(kicked, a, u)
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
