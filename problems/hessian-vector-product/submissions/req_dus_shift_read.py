# The fixed 64-step loop of req_fixed_loop_over_padded_coordinates.py, v_i read by writing v
# into a zero buffer at the moving offset n - r (a dynamic_update_slice of v at the counter)
# and taking its fixed element n: one coordinate of the update is read per step.
import jax
import jax.numpy as jnp


def solve(w, v, s, lam, steps=64):
    n = w.shape[0]

    def loss(u):
        return jax.nn.logsumexp(s * u) + 0.5 * lam * jnp.dot(u, u)

    def column(i, acc):
        r = jnp.minimum(i, n - 1)
        shifted = jax.lax.dynamic_update_slice(jnp.zeros((2 * n,), w.dtype), v, (n - r,))
        v_i = jnp.where(i < n, shifted[n], 0.0)  # = v[r]
        unit = (jnp.arange(n) == i).astype(w.dtype)
        return acc + v_i * jax.jvp(jax.grad(loss), (w,), (unit,))[1]

    return {"hv": jax.lax.fori_loop(0, steps, column, jnp.zeros_like(w))}
