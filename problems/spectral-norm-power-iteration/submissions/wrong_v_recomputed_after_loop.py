# Wrong numbers, structure fine: the loop carries u only; after it, v is recomputed from the
# final u and sigma = u^T (W v). That v is a 9th right update, so sigma is ||W^T u||, off where
# convergence is slow. The 3 successive products with w after the loop (W^T u, W v, u^T (W v))
# are within outside_loop_products = 5: power-iteration-loop holds.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    u = jax.lax.fori_loop(0, 8, lambda i, u: normalize(w @ normalize(w.T @ u)), u)
    v = normalize(w.T @ u)
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
