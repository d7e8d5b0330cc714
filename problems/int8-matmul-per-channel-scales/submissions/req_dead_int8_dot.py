# A float32 matmul computes the result; the int8 dot beside it is computed and thrown away.
import jax.numpy as jnp


def solve(a, a_scale, b, b_scale):
    unused = jnp.matmul(a, b, preferred_element_type=jnp.int32)  # noqa: F841
    acc = a.astype(jnp.float32) @ b.astype(jnp.float32)
    return {"c": acc * a_scale[:, None] * b_scale[None, :]}
