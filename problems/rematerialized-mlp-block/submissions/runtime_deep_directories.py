# Runtime error: a correct solution that, while being imported, leaves 5,000 nested directories
# in its working directory (mkdir + chdir, so the path grows far past PATH_MAX), each with a
# 2 KB file: 10 MB, over the job directory's disk cap (8 x the output limit) on any file
# system. It waits a second so the grader's disk monitor sees it. The grader must judge it
# (output limit exceeded) and then chown and remove that tree without recursing once per level
# (jaxjudge/isolation/fstree.py); the same solution within the cap is accepted (tests/test_hardening.py).
import os
import time

import jax
import jax.numpy as jnp

_home = os.open(".", os.O_RDONLY)
for _ in range(5000):
    os.mkdir("d")
    os.chdir("d")
    with open("f", "wb") as f:
        f.write(b"x" * 2048)
os.fchdir(_home)
os.close(_home)
time.sleep(1)


def block(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return x + h @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    out = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)(params, x)
    return jnp.mean((out - y) ** 2)


def solve(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return {"loss": loss, "grads": grads}
