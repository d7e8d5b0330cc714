# Red team: a zero computed from the int8 dot (acc - acc, which no constant folding removes)
# is added to a before a float32 matmul, so that the float product "depends on" the int8 dot.
# What meets b in that matmul is still a's data: requirement failed.
import jax.numpy as jnp


def solve(a, a_scale, b, b_scale):
    acc = jnp.matmul(a, b, preferred_element_type=jnp.int32)
    zero = jnp.sum(acc - acc, axis=1, keepdims=True).astype(jnp.float32)
    c = (a.astype(jnp.float32) + zero) @ b.astype(jnp.float32)
    return {"c": c * a_scale[:, None] * b_scale[None, :]}
