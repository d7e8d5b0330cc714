# The scale grid built as (N, M) and reshaped to (M, N) instead of transposed: the shapes
# agree, but every scale lands on the wrong row/column (right only when M or N is 1).
import jax.numpy as jnp


def solve(a, a_scale, b, b_scale):
    acc = jnp.matmul(a, b, preferred_element_type=jnp.int32).astype(jnp.float32)
    scales = b_scale[:, None] * a_scale[None, :]  # (N, M)
    return {"c": acc * scales.reshape(acc.shape)}
