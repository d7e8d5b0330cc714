# CHEAT: all 8 iterations unrolled BEFORE the loop into a table; the loop's step i returns
# normalize(table[i+1] + 1e-30 * u): the carried u "feeds" each step but adds nothing.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def solve(w, u):
    us, vs = [u], [jnp.zeros(w.shape[1], w.dtype)]
    for _ in range(8):
        v = normalize(w.T @ us[-1])
        us.append(normalize(w @ v))
        vs.append(v)
    tu, tv = jnp.stack(us), jnp.stack(vs)

    def step(i, uv):
        return tu[i + 1] + 1e-30 * uv[0], tv[i + 1] + 1e-30 * uv[1]

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype)))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
