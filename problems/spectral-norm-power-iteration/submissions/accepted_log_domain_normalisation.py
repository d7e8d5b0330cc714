# Honest (red team, 2026-12-07; rejected while kicked runs took their twin's roundings and
# max/abs choices): one power iteration per step; normalisation in the log domain (overflow-
# safe): x / ||x|| = sign(x) * exp(log|x| - log||x||), with log||x|| by logsumexp of 2 log|x|.
import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp


def lnorm(x):
    la = jnp.log(jnp.abs(x))                 # -inf for zero entries
    ln = 0.5 * logsumexp(2.0 * la)
    ok = jnp.isfinite(ln)
    return jnp.where(ok, jnp.sign(x) * jnp.exp(la - jnp.where(ok, ln, 0.0)), 0.0)


def solve(w, u):
    def step(_, c):
        u, _ = c
        v = lnorm(w.T @ u)
        return lnorm(w @ v), v

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype)))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
