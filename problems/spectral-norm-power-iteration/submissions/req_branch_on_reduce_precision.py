# CHEAT: a switch whose value differs between the grader's StableHLO interpreter (stage B,
# which evaluates reduce_precision as the identity) and the real XLA run (which rounds
# 1.1 to 1 mantissa bit). Under lax.cond, the interpreter sees the honest 8-step loop; the
# real tests run only the other branch: the 8 iterations unrolled, no loop at all. Caught since
# stage B rounds as XLA does, bit for bit.
import jax
import jax.numpy as jnp


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def honest(w, u):
    def step(_, uv):
        v = normalize(w.T @ uv[0])
        return normalize(w @ v), v
    return jax.lax.fori_loop(0, 8, step, (u, jnp.zeros_like(w[0])))


def unrolled(w, u):
    v = jnp.zeros_like(w[0])
    for _ in range(8):
        v = normalize(w.T @ u)
        u = normalize(w @ v)
    return u, v


def solve(w, u):
    probe = jnp.float32(1.1) + 0.0 * jnp.sum(jnp.abs(w))  # data-derived: not constant-folded
    in_grader = jax.lax.reduce_precision(probe, exponent_bits=8, mantissa_bits=1) == probe
    u, v = jax.lax.cond(in_grader, honest, unrolled, w, u)
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
