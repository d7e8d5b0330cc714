# Red team: an int8 "dot of a and b" whose b side is an identity matrix masked out of b with
# jnp.where (every entry of b replaced), so that it passes for the product while it only copies
# a; the real product is then an int32 elementwise multiply-and-sum of that copy with b. The
# grader reads the identity from the program: the dot is a copy of a, which meets b.
import jax.numpy as jnp
from jax import lax


def solve(a, a_scale, b, b_scale):
    k = a.shape[1]
    i = lax.broadcasted_iota(jnp.int32, (k, k), 0)
    j = lax.broadcasted_iota(jnp.int32, (k, k), 1)
    b00 = jnp.broadcast_to(b[:1, :1], (k, k))
    eye = jnp.where(i == j, jnp.int8(1), jnp.where(i != j, jnp.int8(0), b00))
    a_copy = jnp.matmul(a, eye, preferred_element_type=jnp.int32)
    acc = jnp.sum(a_copy[:, :, None] * b.astype(jnp.int32)[None, :, :], axis=1)
    return {"c": acc.astype(jnp.float32) * a_scale[:, None] * b_scale[None, :]}
