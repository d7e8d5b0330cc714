# Cheat (red-team round 6 of 2026-12-06, issue #30): the product is a float32 matmul of a and b, returned through a jnp.where whose
# predicate is a TOTALORDER compare -0.0 < 0.0 (lax lt_to): true at run time, but the constant
# folder ignores the comparison type and evaluates it as Python's -0.0 < 0.0, False, so it
# believes only the int8 dot (the other branch) reaches the output.
# (The -0.0 passes an optimization_barrier: XLA's own constant folding evaluates the TOTALORDER
# compare of two constants as False too; the barrier keeps it to run time, the folder sees
# through it.)
import jax
import jax.numpy as jnp
from jax import lax
from jax._src.lax import lax as _L


def solve(a, a_scale, b, b_scale):
    acc = lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32)
    flt = (a.astype(jnp.float32) @ b.astype(jnp.float32)).astype(jnp.int32)
    pick = _L.lt_to_p.bind(lax.optimization_barrier(jnp.float32(-0.0)), jnp.float32(0.0))
    prod = jnp.where(pick, flt, acc + 1)  # the int8 branch is even wrong: it is never taken
    c = prod.astype(jnp.float32) * a_scale[:, None] * b_scale[None, :]
    return {"c": c}
