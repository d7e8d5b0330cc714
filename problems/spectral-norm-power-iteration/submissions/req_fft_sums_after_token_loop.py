# Fails power-iteration-loop: the sample decoy's token loop
# (u + 1e-30 W W^T u), the 8 real iterations unrolled in Python after it, but every matrix
# product and every norm is a sum taken as the DC term of an FFT (fft(a)[0] = sum(a)): no
# dot_general and no reduce, so none of the ~17 outside products is counted.
import jax
import jax.numpy as jnp


def fsum(a, axis=-1):
    return jnp.take(jnp.fft.fft(a, axis=axis), 0, axis=axis).real


def normalize(x):
    return x / jnp.maximum(jnp.sqrt(fsum(x * x)), 1e-12)


def solve(w, u):
    u = jax.lax.fori_loop(0, 8, lambda i, c: c + 1e-30 * (w @ (w.T @ c)), u)
    v = jnp.zeros_like(w[0])
    for _ in range(8):
        v = normalize(fsum(w * u[:, None], axis=0))  # w.T @ u
        u = normalize(fsum(w * v[None, :], axis=1))  # w @ v
    sigma = fsum(u * fsum(w * v[None, :], axis=1))
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1)}
