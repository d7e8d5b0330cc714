# Requirement failed: the block is checkpointed with nothing_saveable (the backward pass
# recomputes x·W1 too), and a decoy beside it really rematerializes a tanh of its own x·W1 under
# dots_saveable, its gradients added times zero. The program-level rule sees that the tanh the
# block's backward pass reads comes from a recomputed product, whatever the decoy does.
import jax
import jax.numpy as jnp

cp = jax.checkpoint_policies


def block(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return x + h @ params["w2"] + params["b2"]


def solve(params, x, y):
    def loss_fn(p):
        out = jax.checkpoint(block, policy=cp.nothing_saveable)(p, x)
        return jnp.mean((out - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    act = jax.checkpoint(lambda p: jnp.tanh(x @ p["w1"] + p["b1"]), policy=cp.dots_saveable)
    decoy = jax.grad(lambda p: jnp.sum(act(p)))(params)
    grads = jax.tree_util.tree_map(lambda g, d: g + 0.0 * d, grads, decoy)
    return {"loss": loss, "grads": grads}
