# The fixed 64-step loop of req_fixed_loop_over_padded_coordinates.py, v_i read from
# concatenate([v, 2 v]).reshape(2, n) at [0, min(i, n - 1)]: the split's inner part (of size
# n) is the coordinate axis, read one coordinate per step at the counter.
import jax
import jax.numpy as jnp


def solve(w, v, s, lam, steps=64):
    n = w.shape[0]
    both = jnp.concatenate([v, 2.0 * v]).reshape(2, n)

    def loss(u):
        return jax.nn.logsumexp(s * u) + 0.5 * lam * jnp.dot(u, u)

    def column(i, acc):
        v_i = jnp.where(i < n, both[0, jnp.minimum(i, n - 1)], 0.0)
        unit = (jnp.arange(n) == i).astype(w.dtype)
        return acc + v_i * jax.jvp(jax.grad(loss), (w,), (unit,))[1]

    return {"hv": jax.lax.fori_loop(0, steps, column, jnp.zeros_like(w))}
