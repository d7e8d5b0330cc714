# Cheat (execution evidence): a custom_vjp block whose backward computes a "recomputed" tanh of
# the saved product but only adds it times (tanh - tanh) -- zero -- and really uses the forward
# tanh carried as a residual through a size-1 reduction; a dead jax.checkpoint beside it.
import jax
import jax.numpy as jnp


def _dead(params, x):
    return jnp.tanh(x @ params["w1"] + params["b1"])


_ckpt = jax.checkpoint(_dead, policy=jax.checkpoint_policies.dots_saveable)


@jax.custom_vjp
def block(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return x + h @ params["w2"] + params["b2"]


def block_fwd(params, x):
    z = x @ params["w1"]
    h = jnp.tanh(z + params["b1"])
    return x + h @ params["w2"] + params["b2"], (params, x, z, h[..., None])


def block_bwd(res, g):
    params, x, z, h1 = res
    h = jnp.sum(h1, axis=-1)  # the forward tanh, through a size-1 reduction
    r = jnp.tanh(z + params["b1"])  # a decoy recompute
    h = h + r * (r - r)
    dh = g @ params["w2"].T
    dz = dh * (1.0 - h * h)
    grads = {"w1": x.T @ dz, "b1": dz.sum(0), "w2": h.T @ g, "b2": g.sum(0)}
    return grads, g + dz @ params["w1"].T


block.defvjp(block_fwd, block_bwd)


def solve(params, x, y):
    def loss(params):
        dead = _ckpt(params, x)
        out = block(params, x)
        return jnp.mean((out - y) ** 2) + 0.0 * dead.sum()

    value, grads = jax.value_and_grad(loss)(params)
    return {"loss": value, "grads": grads}
