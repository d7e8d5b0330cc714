"""How the program rule's cost grows with a hostile program's size (not the unit suite).

The review padded a correct solution with a zero-weighted tree of x@W1 products to make the
trusted parent slow (48 s for 2,048 products with the old per-product reachability). This
exports that submission for growing N, in this process, and times `analyze_program` on its
text: the rule must stay linear (about 2x per doubling) and well under a second or two at the
sizes stage B lets through.

    .venv/bin/python bench/rule_scaling.py            # N = 256 .. 2048, both placements
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import export
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir

from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.rules.program import analyze_program

ARGS = ["params.b1", "params.b2", "params.w1", "params.w2", "x", "y"]
OUTS = ["grads.b1", "grads.b2", "grads.w1", "grads.w2", "loss"]


def padded(n: int, into_tanh: bool) -> Callable[..., Any]:
    """A correct rematerialized block plus n zero-weighted copies of x@W1, added either to the
    loss or inside the tanh's argument."""

    def block(p: dict[str, jax.Array], x: jax.Array) -> jax.Array:
        z = x @ p["w1"] + p["b1"]
        if into_tanh:
            z = z + 0.0 * sum(x @ p["w1"] for _ in range(n))
        return x + jnp.tanh(z) @ p["w2"] + p["b2"]

    def solve(params: dict[str, jax.Array], x: jax.Array, y: jax.Array) -> dict[str, Any]:
        def loss_fn(p: dict[str, jax.Array]) -> jax.Array:
            out = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)(p, x)
            loss = jnp.mean((out - y) ** 2)
            if not into_tanh:
                loss = loss + 0.0 * jnp.sum(sum(x @ p["w1"] for _ in range(n)))
            return loss

        loss, grads = jax.value_and_grad(loss_fn)(params)
        return {"loss": loss, "grads": grads}

    return solve


def program_text(solve: Callable[..., Any], *args: Any) -> tuple[str, list[str]]:
    exp = export.deserialize(export.export(jax.jit(solve))(*args).serialize())
    with mlir.make_ir_context():
        module = ir.Module.parse(exp.mlir_module())
        text = module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)
    return text, [ARGS[i] for i in sorted(exp.module_kept_var_idx)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024, 2048])
    opts = parser.parse_args()
    rng = np.random.default_rng(0)
    params = {k: rng.standard_normal(s).astype(np.float32)
              for k, s in (("w1", (3, 4)), ("b1", (4,)), ("w2", (4, 3)), ("b2", (3,)))}
    x = rng.standard_normal((2, 3)).astype(np.float32)
    print(f"{'placement':10} {'N':>6} {'text':>10} {'verdict':>8} {'seconds':>8}")
    for into_tanh in (False, True):
        for n in opts.sizes:
            text, args = program_text(padded(n, into_tanh), params, x, x)
            t = time.perf_counter()
            finding = analyze_program(ProgramInfo("bench", text, args, OUTS),
                                      activation="tanh", product=["x", "params.w1"])
            dt = time.perf_counter() - t
            where = "tanh arg" if into_tanh else "loss"
            print(f"{where:10} {n:6d} {len(text):10,d} {finding.kind:>8} {dt:8.3f}")


if __name__ == "__main__":
    main()
