# Decoy: the power iteration unrolled in Python, beside an 8-step loop whose state is computed
# from w and its previous value at every step (a running sum of min(|sum w|, 0), always 0) and
# reaches sigma. The loop "works" on w, but u reaches the outputs outside it.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    def token_step(_, c):
        return c + jnp.minimum(jnp.abs(jnp.sum(w)), 0.0) + jnp.minimum(c, 0.0)

    token = jax.lax.fori_loop(0, 8, token_step, jnp.float32(0.0))
    v = jnp.zeros_like(w[0])
    for _ in range(8):
        v = normalize(w.T @ u)
        u = normalize(w @ v)
    sigma = u @ (w @ v) + token
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
