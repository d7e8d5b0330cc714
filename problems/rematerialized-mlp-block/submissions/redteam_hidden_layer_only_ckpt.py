# Red team (misleading message; the verdict requirement_failed is defensible, the message is not).
# A plausible learner reading of "rematerialize the tanh": only the hidden layer
# tanh(x @ W1 + b1) is wrapped in jax.checkpoint(policy=dots_saveable), inside the
# differentiated loss; h @ W2 stays outside. The backward pass does recompute the tanh from the
# saved x·W1 for the tanh derivative, but h is also the input of the outer h @ W2, so autodiff
# stores the forward h for grads["w2"]: the program really reads the forward tanh (saved_read).
# The rule's message then says "no checkpoint, a checkpoint outside the differentiated function,
# or a policy that saves everything" and tells the learner to do what they already did; it
# should say that h @ W2 must be inside the checkpointed function too. The spec rule passes on
# its own (a differentiated dots_saveable region holding the tanh) and fails uncorroborated.
# (Found by a red-team round against the first program rule; the rule now handles it.)
import jax
import jax.numpy as jnp

hidden = jax.checkpoint(
    lambda w1, b1, x: jnp.tanh(x @ w1 + b1),
    policy=jax.checkpoint_policies.dots_saveable,
)


def loss_fn(p, x, y):
    out = x + hidden(p["w1"], p["b1"], x) @ p["w2"] + p["b2"]
    return jnp.mean((out - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
