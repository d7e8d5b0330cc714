# accepted_diag_scales.py with a special case for one column of b: a Python branch on b's shape
# sends the grader to per-shape exports. Same verdict as the symbolic export.
import jax.numpy as jnp


def solve(a, a_scale, b, b_scale):
    acc = jnp.matmul(a, b, preferred_element_type=jnp.int32).astype(jnp.float32)
    if b.shape[1] == 1:
        return {"c": (a_scale * b_scale[0])[:, None] * acc}
    return {"c": jnp.diag(a_scale) @ acc @ jnp.diag(b_scale)}
