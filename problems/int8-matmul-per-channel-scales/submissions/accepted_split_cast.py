# An unusual but exact cast after the int8 dot: the int32 accumulator split into a high and a
# low part, each converted to float32 and recombined (both parts and their sum are exact in
# float32 for |acc| <= 2**24). Only the dot's result is rearranged: accepted.
import jax.numpy as jnp
from jax import lax


def solve(a, a_scale, b, b_scale):
    acc = lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32)
    hi, lo = acc >> 12, acc & 0xFFF
    c = hi.astype(jnp.float32) * 4096.0 + lo.astype(jnp.float32)
    return {"c": c * a_scale[:, None] * b_scale}
