# Issue #30, "shapes the probes never see": rows of the Hessian in a Python loop only for the
# first few coordinates (n > 12 takes the loop over the first 8, the rest from one jvp).
import jax
import jax.numpy as jnp


def loss(w, s, lam):
    return jax.nn.logsumexp(s * w) + 0.5 * lam * jnp.sum(w * w)


def solve(w, v, s, lam):
    grad = jax.grad(loss)
    hv = jax.jvp(lambda u: grad(u, s, lam), (w,), (v,))[1]
    if w.shape[0] > 12:
        head = [jax.grad(lambda u, i=i: grad(u, s, lam)[i])(w) @ v for i in range(8)]
        hv = hv.at[:8].set(jnp.stack(head))
    return {"hv": hv}
