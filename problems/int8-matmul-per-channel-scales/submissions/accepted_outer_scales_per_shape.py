# accepted_outer_scales_matmul.py with a special case for one row: a Python branch on a's shape
# makes the grader export one program per input shape instead of one with symbolic M, K, N.
# The verdict must not depend on that path.
import jax.numpy as jnp


def solve(a, a_scale, b, b_scale):
    acc = jnp.matmul(a, b, preferred_element_type=jnp.int32).astype(jnp.float32)
    if a.shape[0] == 1:
        scales = a_scale[0] * b_scale[None, :]
    else:
        scales = a_scale[:, None] @ b_scale[None, :]
    return {"c": acc * scales}
