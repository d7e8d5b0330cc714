# Wrong answer: the Hessian of the log-sum-exp alone; the L2 term adds lam * v.
import jax


def solve(w, v, s, lam):
    _, hv = jax.jvp(jax.grad(lambda u: jax.nn.logsumexp(s * u)), (w,), (v,))
    return {"hv": hv}
