# Scales as diagonal matrices on both sides of the float accumulator: diag(a_scale) @ acc @
# diag(b_scale). Float matmuls, but of the int8 dot's result with the scales, and the eye/iota
# of jnp.diag is sized by a's and b's shapes, not computed from their values.
import jax.numpy as jnp


def solve(a, a_scale, b, b_scale):
    acc = jnp.matmul(a, b, preferred_element_type=jnp.int32).astype(jnp.float32)
    return {"c": jnp.diag(a_scale) @ acc @ jnp.diag(b_scale)}
