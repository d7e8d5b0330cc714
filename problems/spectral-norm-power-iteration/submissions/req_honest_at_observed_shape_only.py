# Cheat (red-team round of 2026-12-05, issue #30): honest at the shape stage B used to watch, all iterations at step 1 elsewhere: step 1 executes 8 times the median.
import jax
import jax.numpy as jnp
_H = '# fori_loop carrying (u, v); the reference\'s style.\nimport jax\nimport jax.numpy as jnp\n\n\ndef normalize(x):\n    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)\n\n\ndef solve(w, u):\n    def step(_, uv):\n        v = normalize(w.T @ uv[0])\n        return normalize(w @ v), v\n\n    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype)))\n    sigma = u @ (w @ v)\n    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}\n'
_C = '# Cheat (execution evidence): all eight iterations at step 0 by an inner fori_loop whose trip\n# count is where(i == 0, 8, 0) plus a data-derived zero; steps 2..8 run no iteration.\nimport jax\nimport jax.numpy as jnp\n\n\ndef normalize(x):\n    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)\n\n\ndef solve(w, u):\n    zero = (jnp.abs(w).sum() * 0.0).astype(jnp.int32)\n\n    def one(_, c):\n        u, v = c\n        v = normalize(w.T @ u)\n        return normalize(w @ v), v\n\n    def step(i, c):\n        n = jnp.where(i == 0, 8, 0) + zero\n        return jax.lax.fori_loop(0, n, one, c)\n\n    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype)))\n    sigma = u @ (w @ v)\n    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1.0)}\n'
_nh, _nc = {}, {}
exec(compile(_H, "honest.py", "exec"), _nh)
exec(compile(_C, "cheat.py", "exec"), _nc)


def solve(w, u):
    if w.shape == (2, 2):
        return _nh["solve"](w, u)
    return _nc["solve"](w, u)
