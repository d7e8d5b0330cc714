# Accepted (red-team round 3 of 2026-12-06): the running maximum and sum carried broadcast to
# (T, d), beside the output.
import jax
import jax.numpy as jnp


def solve(q, k, v):
    t, d = q.shape
    qs = q / jnp.sqrt(jnp.float32(d))

    def body(j, c):
        o, l, m = c
        kj = jax.lax.dynamic_slice_in_dim(k, j * 4, 4)
        vj = jax.lax.dynamic_slice_in_dim(v, j * 4, 4)
        s = qs @ kj.T
        m2 = jnp.maximum(m, s.max(axis=1, keepdims=True))
        p = jnp.exp(s - m2[:, :1])
        r = jnp.exp(m - m2)
        return o * r + p @ vj, l * r + p.sum(axis=1, keepdims=True), m2

    init = (jnp.zeros((t, d)), jnp.zeros((t, d)), jnp.full((t, d), -jnp.inf))
    o, l, m = jax.lax.fori_loop(0, t // 4, body, init)
    return {"out": o / l}
