# Red team (false REJECT of tanh-rematerialized; SHOULD be accepted).
# An honest solution: the checkpointed block (dots_saveable, inside the differentiated loss) is
# applied to one row at a time in a Python loop and the rows are stacked back before the MSE.
# Every row's tanh is genuinely rematerialized from that row's saved x·W1 product. But
# range(x.shape[0]) needs concrete shapes, so stage A exports one program per input signature,
# each with B separate products, and the rows' cotangents meet in the stacked output: the rule
# (which follows concatenate/slice as "all values") sees row i's recomputed tanh read against
# the forward tanh of row j != i, a different product, and reports "recomputed" (the message
# blames nothing_saveable / no policy) for every signature with B >= 2.
# (Found by a red-team round against the first program rule; the rule now handles it.)
import jax
import jax.numpy as jnp

block = jax.checkpoint(
    lambda p, x: x + jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"],
    policy=jax.checkpoint_policies.dots_saveable,
)


def loss_fn(params, x, y):
    out = jnp.concatenate([block(params, x[i:i + 1]) for i in range(x.shape[0])], axis=0)
    return jnp.mean((out - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
