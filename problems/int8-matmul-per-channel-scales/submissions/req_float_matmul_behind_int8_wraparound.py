# Cheat (red-team round 5 of 2026-12-06, issue #30): the int8 dot is a decoy; the output comes
# from a float32 matmul picked by a condition on an int8 value that wraps around at run time
# (200 is -56), which the grader's constant folding once read as true. Folded values now wrap.
import jax
import jax.numpy as jnp
from jax import lax


def solve(a, a_scale, b, b_scale):
    # The grader's constant folder does not wrap integers: (0 + 200) as int8 is 200 to it,
    # -56 at run time. So it believes `pred` is True and only follows the int8-dot branch.
    z = (a[0, 0] & jnp.int8(0)).astype(jnp.int32)
    k = (z + 200).astype(jnp.int8)
    pred = k > 0
    acc = lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32)
    decoy = acc.astype(jnp.float32) * a_scale[:, None] * b_scale[None, :]
    cheat = (a.astype(jnp.float32) @ b.astype(jnp.float32)) * a_scale[:, None] * b_scale[None, :]
    return {"c": jnp.where(pred, decoy, cheat)}
