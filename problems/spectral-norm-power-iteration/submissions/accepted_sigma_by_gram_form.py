# Accepted: the loop carries (u, v); after it, sigma is written as sqrt(v^T W^T W v) (= ||W v||,
# the longest honest chain measured: 3 successive products with w after the loop, within
# outside_loop_products = 5).
import jax
import jax.numpy as jnp

EPS = 1e-12


def solve(w, u):
    def body(_, carry):
        right = w.T @ carry[0]
        right = right / jnp.maximum(jnp.linalg.norm(right), EPS)
        left = w @ right
        return left / jnp.maximum(jnp.linalg.norm(left), EPS), right

    u, v = jax.lax.fori_loop(0, 8, body, (u, jnp.zeros(w.shape[1], w.dtype)))
    gram_v = w.T @ (w @ v)
    sigma = jnp.sqrt(jnp.maximum(jnp.dot(v, gram_v), 0.0))
    safe = jnp.where(sigma > 0, sigma, 1.0)
    return {"sigma": sigma, "u": u, "w_sn": w / safe}
