import jax
import jax.numpy as jnp


def loss(w, s, lam):
    """f(w) = logsumexp(s * w) + lam / 2 * ||w||^2 (a scalar)."""
    return jax.nn.logsumexp(s * w) + 0.5 * lam * jnp.sum(w * w)


def solve(w, v, s, lam):
    """The Hessian of `loss` with respect to w, at w, times v, without building it.

    w, v, s: float32 arrays of shape (n,); lam: a float32 scalar (shape ()).

    Return {"hv": float32 array of shape (n,)}.
    """
    # TODO: differentiate w -> grad(loss)(w, s, lam) in the direction v (jax.jvp), or take the
    #       gradient of w -> <grad(loss)(w, s, lam), v>. No n x n array anywhere.
    raise NotImplementedError("solve is not written yet")
