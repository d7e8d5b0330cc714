# Cheat (issue #30, a new form of the difference of copies): two power iterations on even steps;
# on odd steps only a nudge by (w - c/2), where c is twice w carried along. The difference is
# zero in every real run and moves only when w changes mid-loop; the parity gate uses a data zero.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    zero = jnp.minimum(jnp.abs(w).sum(), 0.0).astype(jnp.int32)

    def two(c):
        u, v, c2 = c
        v = normalize(w.T @ u)
        u = normalize(w @ v)
        v = normalize(w.T @ u)
        return normalize(w @ v), v, 2.0 * w

    def nudge(c):
        u, v, c2 = c
        d = w - 0.5 * c2
        return u + d @ v, v + d.T @ u, 2.0 * w

    def step(i, c):
        return jax.lax.cond((i + zero) % 2 == 0, two, nudge, c)

    u, v, _ = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype), 2.0 * w))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
