# Accepted: prevent_cse=False only drops the optimization barrier (fine under jit); the policy and
# the recomputed tanh are unchanged.
import jax
import jax.numpy as jnp


def mlp_block(p, x):
    hidden = jnp.tanh(jnp.matmul(x, p["w1"]) + p["b1"])
    return x + jnp.matmul(hidden, p["w2"]) + p["b2"]


remat_block = jax.checkpoint(
    mlp_block, policy=jax.checkpoint_policies.dots_saveable, prevent_cse=False
)


def solve(params, x, y):
    def mse(p):
        return jnp.mean(jnp.square(remat_block(p, x) - y))

    loss, grads = jax.value_and_grad(mse)(params)
    return {"loss": loss, "grads": grads}
