# Cheat (2026-12-07, written against the trajectory check): every average at once before the
# loop, then a T-step loop that carries them beside a counter reaching them by 1e-30 (nothing in
# float32). Stopped at any step the loop already holds the whole answer, and values a loop holds
# from its start are not counted as done early (an honest buffer can start as x), so the
# trajectory does not fail it; the loop's carry check does (the outputs are computed from all
# of x at once).
import jax
import jax.numpy as jnp


def solve(x, alpha):
    t = jnp.arange(x.shape[0])
    keep = (1 - alpha).astype(x.dtype)
    w = alpha * keep ** (t[:, None] - t[None, :]).astype(x.dtype)
    w = jnp.where(t[:, None] >= t[None, :], w, 0.0)
    w = w.at[:, 0].set(keep ** t.astype(x.dtype))
    ema = w @ x

    def step(i, c):
        e, k = c
        k = k * 1.0001 + x[i, 0]
        return e + 1e-30 * k, k

    ema, _ = jax.lax.fori_loop(0, x.shape[0], step, (ema, jnp.zeros((), x.dtype)))
    return {"ema": ema}
