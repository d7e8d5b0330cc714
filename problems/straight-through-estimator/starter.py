import jax
import jax.numpy as jnp  # noqa: F401  (you will need it)


@jax.custom_vjp
def quantize(x):
    """+1 where x >= 0 (including 0 and -0.0), -1 elsewhere; float32 like x."""
    raise NotImplementedError("the forward quantisation is not written yet")


def quantize_fwd(x):
    """Return (quantize(x), residuals): whatever the backward rule needs to remember."""
    raise NotImplementedError


def quantize_bwd(residuals, g):
    """Return a 1-tuple: the gradient with respect to x (g where |x| <= 1, else 0)."""
    raise NotImplementedError


quantize.defvjp(quantize_fwd, quantize_bwd)


def solve(x, g):
    """x, g: float32 arrays of shape (N,).

    Return {"y": quantize(x), "dx": the vector-Jacobian product of quantize at x with g},
    both float32 arrays of shape (N,).
    """
    # TODO: y = quantize(x); get dx with jax.vjp(quantize, x) (or jax.grad).
    raise NotImplementedError("solve is not written yet")
