# Cheat (red team, 2026-12-07): the 8 iterations unrolled BEFORE the loop into a table (closed
# over, not carried); the loop carries u, v and only looks rows up. The switch between "next
# table row" and "one iteration of the state" is a dynamic_slice whose index is the int32 bits
# of a float gate g = d / (d + 1e-30), d = ||u - T[i]||^2 (bits of 0.0 -> row 0; bits of 1.0 ->
# clamped to row 1): an integer that only carries a float's bits is not taken from the twin. In
# the real run the iteration inside the loop runs on the zero vector.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def nf(x):
    return x * jax.lax.rsqrt(jnp.sum(x * x) + 1e-37)


def P(w, u):
    v = normalize(w.T @ u)
    return normalize(w @ v), v


def gate(d):
    return d / (d + 1e-30)


def solve(w, u0):
    M, N = w.shape
    us, vs, u = [u0], [jnp.zeros(N, w.dtype)], u0
    for _ in range(8):
        u, v = P(w, u)
        us.append(u); vs.append(v)
    T, V = jnp.stack(us), jnp.stack(vs)

    def pick(rows, idx):
        return jax.lax.dynamic_index_in_dim(jnp.stack(rows), idx, keepdims=False)

    def step(i, c):
        u, v = c
        g = gate(jnp.sum((u - T[i]) ** 2))
        idx = jax.lax.bitcast_convert_type(g, jnp.int32)
        x = pick([jnp.zeros_like(u), u], idx)
        hv = nf(w.T @ x)
        hu = nf(w @ hv)
        return pick([T[i + 1], hu], idx), pick([V[i + 1], hv], idx)

    u, v = jax.lax.fori_loop(0, 8, step, (u0, jnp.zeros(N, w.dtype)))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
