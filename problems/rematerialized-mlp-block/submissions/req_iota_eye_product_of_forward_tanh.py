# Issue #30, "the work done by hand", a variant (SHOULD be requirement_failed, both).
# As req_size_one_reduce_of_forward_tanh.py, with h @ jnp.eye(H): an identity matrix built from
# iota at run time, which jaxjudge.analysis.identity reads as giving h back; the program-level rule
# read the product as h's continuation (a contraction) until it used that reading too.
import jax.numpy as jnp


def solve(params, x, y):
    w1, b1, w2, b2 = params["w1"], params["b1"], params["w2"], params["b2"]
    a = x @ w1
    h = jnp.tanh(a + b1)
    out = x + h @ w2 + b2
    err = out - y
    loss = jnp.mean(err * err)
    hs = h @ jnp.eye(h.shape[1], dtype=h.dtype)   # an identity product
    d_out = 2.0 * err / err.size
    g_w2 = hs.T @ d_out
    g_b2 = d_out.sum(0)
    dh = d_out @ w2.T
    r = jnp.tanh(a + b1)            # recomputed, for the tanh's own derivative only
    dz = dh * (1.0 - r * r)
    g_w1 = x.T @ dz
    g_b1 = dz.sum(0)
    return {"loss": loss, "grads": {"w1": g_w1, "b1": g_b1, "w2": g_w2, "b2": g_b2}}
