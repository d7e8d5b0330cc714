# Attack: forge the source locations the exported program records, hoping the report points
# (or breaks) somewhere the grader did not choose.
#
# The block is computed correctly, but by helpers compiled under forged locations: the tanh one
# at line numbers a billion lines past the end of this file (under this file's own name), the dot
# one under a 200 KB file name (a megabyte one makes the export itself larger than the files a
# submission may write: a runtime_error), the bias one under another file's path. The locations
# are
# pointers the submission chose; the grader keeps only lines within this file, so the report
# shows no forged line, and the verdict is the honest one (accepted).

import ast

import jax
import jax.numpy as jnp


def _compiled(source: str, filename: str, shift: int = 0) -> dict:
    tree = ast.parse(source)
    ast.increment_lineno(tree, shift)
    scope = {"jnp": jnp}
    exec(compile(tree, filename, "exec"), scope)
    return scope


_tanh = _compiled("def act(z):\n    return jnp.tanh(z)\n", __file__, shift=10**9)["act"]
_dot = _compiled("def dot(a, b):\n    return a @ b\n", "x" * 200_000 + ".py")["dot"]
_bias = _compiled("def bias(a, b):\n    return a + b\n", "/usr/lib/python3/os.py")["bias"]


def _block(params, x):
    hidden = _tanh(_bias(_dot(x, params["w1"]), params["b1"]))
    return x + _bias(_dot(hidden, params["w2"]), params["b2"])


_checkpointed = jax.checkpoint(_block, policy=jax.checkpoint_policies.dots_saveable)


def solve(params, x, y):
    def loss(p):
        return jnp.mean((_checkpointed(p, x) - y) ** 2)

    value, grads = jax.value_and_grad(loss)(params)
    return {"loss": value, "grads": grads}
