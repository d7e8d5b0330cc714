# Forging attempt: replaces os._exit, which the tracing process calls once it has written its
# result, with a version that first overwrites result.json with a result of the wrong shape
# (timings as a list, an "accepted"-looking status, numbers JSON cannot hold). The stages exit
# through the os._exit they captured before any submission ran, so the forgery never runs (a
# forged file would meet the schema check: a runtime error, never a crash of the grader); the
# verdict is the one of the code below, a block without jax.checkpoint.
import json
import os

import jax
import jax.numpy as jnp

_real_exit = os._exit


def _forge_then_exit(code):
    with open("result.json", "w") as f:
        f.write(json.dumps({"status": "ok", "verdict": "accepted", "exports": ["poly"],
                            "timings": [1e308, float("inf")], "message": {"score": 100}}))
    _real_exit(code)


os._exit = _forge_then_exit


def solve(params, x, y):
    def loss_fn(p):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        return jnp.mean((x + h @ p["w2"] + p["b2"] - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return {"loss": loss, "grads": grads}
