# Cheat (red team, 2026-12-07): fails power-iteration-loop by trajectory_restart, see expected.toml.
# CHEAT: u stays zero until the loop's last step, which runs all 8 iterations unrolled; a float
# counter c is carried and read as (c - 8) * e_0 into the answer (zero in every real run). A
# zero output after k < 8 steps "tells no step apart"; kicking c moves the answer.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u0):
    M, N = w.shape

    def all8(u):
        v = jnp.zeros(N, w.dtype)
        for _ in range(8):
            v = normalize(w.T @ u)
            u = normalize(w @ v)
        return u, v

    def step(i, carry):
        c, u, v = carry
        nu, nv = jax.lax.cond(i == 7, lambda: all8(u0), lambda: (u * 0.0 + 1e-30 * (w @ v), v))
        return c + 1.0, nu, nv

    c, u, v = jax.lax.fori_loop(0, 8, step, (jnp.float32(0.0), jnp.zeros(M, w.dtype),
                                            jnp.zeros(N, w.dtype)))
    u = u + (c - 8.0) * jnp.zeros(M, w.dtype).at[0].set(1.0) * (jnp.sum(u * u) > 0)
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
