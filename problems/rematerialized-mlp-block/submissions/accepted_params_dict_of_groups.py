# Honest form (issue 41): parameters as a dict of groups. The flat params are regrouped into
# {"layer1": {"w", "b"}, "layer2": {"w", "b"}}, the checkpointed block and the gradient work on
# that nested dict, and the grads are flattened back to w1/b1/w2/b2 at the end.
import jax
import jax.numpy as jnp


def group(params):
    return {"layer1": {"w": params["w1"], "b": params["b1"]},
            "layer2": {"w": params["w2"], "b": params["b2"]}}


def ungroup(groups):
    return {"w1": groups["layer1"]["w"], "b1": groups["layer1"]["b"],
            "w2": groups["layer2"]["w"], "b2": groups["layer2"]["b"]}


def block(groups, x):
    l1, l2 = groups["layer1"], groups["layer2"]
    h = jnp.tanh(x @ l1["w"] + l1["b"])
    return x + h @ l2["w"] + l2["b"]


block = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)


def loss_fn(groups, x, y):
    return jnp.mean((block(groups, x) - y) ** 2)


def solve(params, x, y):
    loss, g = jax.value_and_grad(loss_fn)(group(params), x, y)
    return {"loss": loss, "grads": ungroup(g)}
