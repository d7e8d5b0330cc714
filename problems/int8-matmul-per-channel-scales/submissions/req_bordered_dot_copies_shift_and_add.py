# Red team round 7 (2026-12-07; accepted until then): one int8 dot of [a ; I] and [b | I]
# returns copies of a and b beside a @ b; a * b is rebuilt from them with shifts and selects.
import jax.numpy as jnp


def solve(a, a_scale, b, b_scale):
    m, k = a.shape
    n = b.shape[1]
    eye = jnp.eye(k, dtype=jnp.int8)
    r = jnp.matmul(jnp.concatenate([a, eye], axis=0), jnp.concatenate([b, eye], axis=1),
                   preferred_element_type=jnp.int32)
    A = r[:m, n:][:, :, None]                    # copy of a, (M, K, 1)
    u = r[m:, :n][None, :, :] + 128              # copy of b + 128 in 0..255, (1, K, N)
    total = jnp.zeros((m, k, n), jnp.int32)
    for t in range(8):
        bit = jnp.right_shift(u, t) & 1
        total = total + jnp.where(bit == 1, jnp.left_shift(A, t), 0)
    acc = total.sum(axis=1) - jnp.left_shift(A[:, :, 0], 7).sum(axis=1)[:, None]
    return {"c": acc.astype(jnp.float32) * a_scale[:, None] * b_scale[None, :]}
