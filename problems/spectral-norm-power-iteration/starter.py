import jax  # noqa: F401  (you will need jax.lax.fori_loop or jax.lax.scan)
import jax.numpy as jnp  # noqa: F401

NUM_ITERS = 8  # exactly this many power iterations, in one loop
EPS = 1e-12  # normalize(x) = x / max(||x||, EPS)


def solve(w, u):
    """Estimate the largest singular value of w by power iteration, and normalize w by it.

    w: float32 array of shape (M, N)
    u: float32 array of shape (M,), the start vector

    Repeat NUM_ITERS times, in ONE loop (jax.lax.fori_loop or jax.lax.scan, not Python):
        v = normalize(w.T @ u)
        u = normalize(w @ v)
    then sigma = u @ (w @ v), and w_sn = w / sigma (w itself when sigma == 0).

    Return {"sigma": float32 scalar, "u": float32 (M,), "w_sn": float32 (M, N)}.
    No jnp.linalg.svd / eigh / norm(w, 2): the point is the iteration.
    """
    # TODO: write normalize(x) with the EPS guard.
    # TODO: write the loop body: one v update and one u update.
    # TODO: run it NUM_ITERS times, then compute sigma and w_sn.
    raise NotImplementedError("solve is not written yet")
