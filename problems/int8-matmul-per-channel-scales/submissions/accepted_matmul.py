# jnp.matmul with preferred_element_type: the same int8 x int8 -> int32 dot_general.
import jax.numpy as jnp


def solve(a, a_scale, b, b_scale):
    acc = jnp.matmul(a, b, preferred_element_type=jnp.int32)
    c = acc.astype(jnp.float32) * a_scale[:, None]
    return {"c": c * b_scale}
