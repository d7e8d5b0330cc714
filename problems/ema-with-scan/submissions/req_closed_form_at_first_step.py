# Right numbers, but a T-step fori_loop whose first step computes the whole average from x
# (closed over) with the weight matrix and whose later steps carry it along times 1: the loop's
# carried value is computed from all of x at one step, not from one row of it per step
# (`sliced = ["x"]`), so the loop does not carry the recurrence.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    steps = jnp.arange(x.shape[0])
    lag = steps[:, None] - steps[None, :]
    keep = 1 - alpha
    w = jnp.where(lag >= 0, alpha * keep ** jnp.maximum(lag, 0).astype(x.dtype), 0.0)
    w = w.at[:, 0].set(keep ** steps.astype(x.dtype))

    def body(t, out):
        return jnp.where(t == 0, w @ x, out) * 1.0

    return {"ema": jax.lax.fori_loop(0, x.shape[0], body, jnp.zeros_like(x))}
