# Honest (red team, 2026-12-07; rejected while kicked runs took their twin's roundings and
# max/abs choices): one power iteration per step; u is carried in fixed point, round(u * 2^30)
# as int32 (|u| <= 1 after the first step; the start vector is normalised first), decoded at the
# start of each step and encoded at its end. Resolution 1e-9, far inside the tolerance.
import jax
import jax.numpy as jnp

S = 2.0 ** 30


def normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def enc(u):
    return jnp.round(u * S).astype(jnp.int32)


def solve(w, u):
    def step(_, c):
        q, _ = c
        v = normalize(w.T @ (q.astype(jnp.float32) / S))
        return enc(normalize(w @ v)), v

    q, v = jax.lax.fori_loop(0, 8, step, (enc(normalize(u)), jnp.zeros(w.shape[1], w.dtype)))
    u = q.astype(jnp.float32) / S
    u = normalize(u)
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
