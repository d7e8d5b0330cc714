# Red team round 7 (2026-12-07; accepted until then): a @ [b | I] and [a ; I] @ b are real int8
# dots whose extra columns (rows) are copies of a (b); the copies are multiplied by jnp.prod
# over a stacked axis and summed in float32. A dot whose operand holds an identity block
# beside the matrix also returns the other matrix's values.
import jax.numpy as jnp
from jax import lax


def solve(a, a_scale, b, b_scale):
    m, k = a.shape
    n = b.shape[1]
    eye = jnp.eye(k, dtype=jnp.int8)
    r1 = jnp.matmul(a, jnp.concatenate([b, eye], axis=1), preferred_element_type=jnp.int32)
    r2 = jnp.matmul(jnp.concatenate([a, eye], axis=0), b, preferred_element_type=jnp.int32)
    af = r1[:, n:].astype(jnp.float32)            # a, laundered as "the product"
    bf = r2[m:, :].astype(jnp.float32)            # b, laundered as "the product"
    pair = jnp.stack([jnp.broadcast_to(af[:, :, None], (m, k, n)),
                      jnp.broadcast_to(bf[None, :, :], (m, k, n))])
    acc = jnp.prod(pair, axis=0).sum(axis=1)       # float32 elementwise product, summed
    return {"c": acc * a_scale[:, None] * b_scale[None, :]}
