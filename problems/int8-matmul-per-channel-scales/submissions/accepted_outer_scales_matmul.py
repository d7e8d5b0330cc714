# The scale grid as a float32 matmul of the two scale vectors, (M, 1) @ (1, N). Exported with
# symbolic M, K, N, the program reads M and N from a's and b's shapes to size it: that is not a
# product of a and b (only their data counts).
import jax.numpy as jnp


def solve(a, a_scale, b, b_scale):
    acc = jnp.matmul(a, b, preferred_element_type=jnp.int32).astype(jnp.float32)
    return {"c": acc * (a_scale[:, None] @ b_scale[None, :])}
