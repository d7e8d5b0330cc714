# Cheat (a former known limit: the text analysis does not follow associative_scan's shifts):
# a T-step fori_loop carries x itself (x + 1e-30 x the carry), and the average is computed
# AFTER the loop by jax.lax.associative_scan over it. Stage B's observer sees it: changing
# what steps 2-47 read moves nothing the program returns (the loop's work is dropped).
import jax
import jax.numpy as jnp


def solve(x, alpha):
    held = jax.lax.fori_loop(0, x.shape[0], lambda t, c: x + 1e-30 * c, jnp.zeros_like(x))
    decay = jnp.full_like(x, 1 - alpha).at[0].set(0.0)  # row 0 starts the average
    scaled = jnp.concatenate([held[:1], alpha * held[1:]])

    def combine(first, then):
        return first[0] * then[0], then[0] * first[1] + then[1]

    return {"ema": jax.lax.associative_scan(combine, (decay, scaled))[1]}
