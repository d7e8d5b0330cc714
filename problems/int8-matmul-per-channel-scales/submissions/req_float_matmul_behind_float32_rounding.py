# Cheat (red-team round 5 of 2026-12-06, issue #30): the same decoy, picked by 1 + 1e-8 > 1,
# false in float32; the folding once computed it in float64. Folded values now round to the type.
# Same folder bug, float flavour: the folder adds in float64, so it sees 1 + 1e-8 > 1 (True);
# in float32 at run time 1 + 1e-8 == 1 and the float32-matmul branch is taken.
import jax.numpy as jnp
from jax import lax


def solve(a, a_scale, b, b_scale):
    z = (a[0, 0] & jnp.int8(0)).astype(jnp.float32)   # folds to 0.0 (integer and with 0)
    pred = (z + jnp.float32(1.0)) + jnp.float32(1e-8) > jnp.float32(1.0)
    acc = lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32)
    decoy = acc.astype(jnp.float32)
    cheat = a.astype(jnp.float32) @ b.astype(jnp.float32)
    return {"c": jnp.where(pred, decoy, cheat) * a_scale[:, None] * b_scale[None, :]}
