# Honest: the loop rotated: it carries z = w^T u (unnormalized), computed once before the loop
# from the start vector; each of the 8 steps does v = n(z), u = n(w v), z = w^T u. Same
# operations in the same order as the statement's iteration.
import jax
import jax.numpy as jnp
def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)
def solve(w, u):
    def step(_, c):
        z, u, v = c
        v = normalize(z)
        u = normalize(w @ v)
        return w.T @ u, u, v
    _, u, v = jax.lax.fori_loop(0, 8, step, (w.T @ u, u, jnp.zeros(w.shape[1], w.dtype)))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
