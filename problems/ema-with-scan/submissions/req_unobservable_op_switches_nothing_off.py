# KNOWN LIMIT (accepted today; should fail): a T-step fori_loop carries x itself (x + 1e-30 x the
# carry), and the average is computed AFTER the loop by jax.lax.associative_scan over it. Its
# slices and elementwise products keep x's values where they are, one position at a time, as
# far as the grader reads them: it does not follow the shifts that combine different rows.
import jax
import jax.numpy as jnp


def solve(x, alpha):
    held = jax.lax.fori_loop(0, x.shape[0], lambda t, c: x + 1e-30 * c, jnp.zeros_like(x))
    decay = jnp.full_like(x, 1 - alpha).at[0].set(0.0)  # row 0 starts the average
    scaled = jnp.concatenate([held[:1], alpha * held[1:]])

    def combine(first, then):
        return first[0] * then[0], then[0] * first[1] + then[1]

    return {"ema": jax.lax.associative_scan(combine, (decay, scaled))[1]}


# --- appended: one op the observer does not evaluate (stablehlo.popcnt on a constant) ---
import functools as _ft
import jax as _jax
import jax.numpy as _jnp
_orig_solve = solve
@_ft.wraps(_orig_solve)
def solve(*a, **kw):
    out = dict(_orig_solve(*a, **kw))
    k = next(iter(out))
    z = _jax.lax.population_count(_jnp.arange(3, dtype=_jnp.int32)).sum()
    out[k] = out[k] + (z * 0).astype(out[k].dtype)
    return out
