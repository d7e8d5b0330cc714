# Right numbers, but the plain formula: the (T, T) score matrix is materialized and there is no
# loop over key blocks, so both requirements fail.
import jax
import jax.numpy as jnp


def solve(q, k, v):
    scores = q @ k.T / jnp.sqrt(jnp.float32(q.shape[1]))
    return {"out": jax.nn.softmax(scores, axis=-1) @ v}
