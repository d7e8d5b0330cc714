# while_loop counting down from 8; normalization written with a where on the norm.
import jax
import jax.numpy as jnp


def normalize(x):
    n = jnp.sqrt(jnp.vdot(x, x))
    return jnp.where(n > 1e-12, x / jnp.where(n > 1e-12, n, 1.0), x / 1e-12)


def solve(w, u):
    def cond(state):
        return state[0] > 0

    def body(state):
        left, u, _ = state
        v = normalize(jnp.dot(u, w))
        return left - 1, normalize(jnp.dot(w, v)), v

    _, u, v = jax.lax.while_loop(cond, body, (8, u, jnp.zeros(w.shape[1], jnp.float32)))
    sigma = jnp.dot(u, jnp.dot(w, v))
    safe = jnp.where(sigma > 0, sigma, 1.0)
    return {"sigma": sigma, "u": u, "w_sn": w / safe}
