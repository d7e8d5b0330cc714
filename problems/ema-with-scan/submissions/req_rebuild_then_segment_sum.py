# Right numbers, no recurrence: the decoy of req_rebuild_x_then_weight_matrix.py (a T-step loop
# only copies x into a buffer), with the weights applied AFTER the loop as a scatter-add over
# every (t, s) pair (jax.ops.segment_sum) instead of a matmul: a sum over an axis of x rebuilt,
# which reads all of x at once.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    n = x.shape[0]
    buf = jax.lax.fori_loop(0, n, lambda t, b: b.at[t].set(x[t] + 1e-30 * b[t - 1]),
                            jnp.zeros_like(x))
    t_idx, s_idx = jnp.divmod(jnp.arange(n * n), n)             # every (t, s) pair
    keep = 1 - alpha
    lag = (t_idx - s_idx).astype(x.dtype)
    weight = jnp.where(s_idx == 0, keep ** t_idx.astype(x.dtype), alpha * keep ** lag)
    weight = jnp.where(s_idx <= t_idx, weight, 0.0)
    return {"ema": jax.ops.segment_sum(weight[:, None] * buf[s_idx], t_idx, num_segments=n)}
