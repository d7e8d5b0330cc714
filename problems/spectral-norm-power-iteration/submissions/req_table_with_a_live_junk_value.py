# Cheat (red team, 2026-12-07): fails power-iteration-loop by trajectory_restart, see expected.toml.
# CHEAT: the 8 iterates unrolled before the loop into a table; an int counter indexes it after
# the loop. The loop also carries a junk float vector j (built from w, never a multiple of u or
# v) that the answer reads through (j - j_expected), zero in every real run: kicking j moves
# the answer, so the loop "computes from what it carries".
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
    base = jnp.arange(1, w.shape[0] + 1, dtype=w.dtype) + jnp.sum(w, axis=1) * 0.0

    def step(i, carry):
        k, j = carry
        return k + 1, 0.5 * j + base + 1e-30 * jnp.sum(w)

    k, j = jax.lax.fori_loop(0, 8, step, (jnp.int32(0), base))
    # j after k steps is base * (2 - 0.5**k) (+ rounding); recompute it from k
    jexp = base * (2.0 - 0.5 ** k.astype(w.dtype))
    uo = tu[k] + (j - jexp)
    vo = tv[k]
    sigma = uo @ (w @ vo)
    return {"sigma": sigma, "u": uo, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}
