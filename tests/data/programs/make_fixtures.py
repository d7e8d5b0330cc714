"""Export prototype solutions to StableHLO generic op form: the program-rule test fixtures.

Run with each supported JAX (the rule must hold on both ends of the range):

    .venv/bin/python tests/data/programs/make_fixtures.py
    /tmp/venv-old/bin/python tests/data/programs/make_fixtures.py

Each case writes `<case>-jax<version>.mlir.gz` (the module exactly as stage B prints it:
deserialized from the serialized export, generic op form, no debug info; gzipped, with a fixed
mtime, because 32 plain modules would be ~250 KB) and `<case>-jax<version>.json`
(`{"signature": ..., "args": [...]}`, main's argument i -> input path). Read one with `zcat`.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import export as jax_export

HERE = Path(__file__).resolve().parent
B, D, H = 2, 3, 4
ARG_PATHS = ["params.b1", "params.b2", "params.w1", "params.w2", "x", "y"]
Params = dict[str, jax.Array]
Solve = Callable[[Params, jax.Array, jax.Array], Any]
cp = jax.checkpoint_policies


def block(p: Params, x: jax.Array) -> jax.Array:
    h = jnp.tanh(x @ p["w1"] + p["b1"])
    return x + h @ p["w2"] + p["b2"]


def mse(out: jax.Array, y: jax.Array) -> jax.Array:
    return jnp.mean((out - y) ** 2)


def with_block(block_fn: Callable[[Params, jax.Array], jax.Array]) -> Solve:
    """The usual shape of a solution: value_and_grad of a loss whose block is `block_fn`."""

    def loss_fn(p: Params, x: jax.Array, y: jax.Array) -> jax.Array:
        return mse(block_fn(p, x), y)

    def solve(params: Params, x: jax.Array, y: jax.Array) -> dict[str, Any]:
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return {"loss": loss, "grads": grads}

    return solve


def separate(params: Params, x: jax.Array, y: jax.Array) -> dict[str, Any]:
    blk = jax.checkpoint(block, policy=cp.dots_saveable)
    loss = mse(block(params, x), y)
    grads = jax.grad(lambda p: mse(blk(p, x), y))(params)
    return {"loss": loss, "grads": grads}


def einsum_block(p: Params, x: jax.Array) -> jax.Array:
    h = jnp.tanh(jnp.einsum("bd,dh->bh", x, p["w1"]) + p["b1"])
    return x + jnp.einsum("bh,hd->bd", h, p["w2"]) + p["b2"]


def outside(params: Params, x: jax.Array, y: jax.Array) -> dict[str, Any]:
    vg = jax.value_and_grad(lambda p: mse(block(p, x), y))
    loss, grads = jax.checkpoint(vg, policy=cp.dots_saveable)(params)
    return {"loss": loss, "grads": grads}


def no_tanh_block(p: Params, x: jax.Array) -> jax.Array:
    pre = jax.checkpoint(lambda p, x: x @ p["w1"] + p["b1"], policy=cp.dots_saveable)(p, x)
    return x + jnp.tanh(pre) @ p["w2"] + p["b2"]


def decoy_block(p: Params, x: jax.Array) -> jax.Array:
    """An unrelated checkpointed (and differentiated) tanh next to an unchecked block."""
    extra = jax.checkpoint(lambda z: jnp.tanh(z) * 1e-3, policy=cp.dots_saveable)(p["b2"])
    return block(p, x) + extra


def inner_jit_block(p: Params, x: jax.Array) -> jax.Array:
    inner = jax.jit(jax.checkpoint(block, policy=cp.dots_saveable))
    return inner(p, x)


def inner_jit_matmul_block(p: Params, x: jax.Array) -> jax.Array:
    """The matmul itself behind a jit boundary: the product crosses func.call results."""

    @jax.jit
    def pre(p: Params, x: jax.Array) -> jax.Array:
        return x @ p["w1"] + p["b1"]

    def body(p: Params, x: jax.Array) -> jax.Array:
        return x + jnp.tanh(pre(p, x)) @ p["w2"] + p["b2"]

    return jax.checkpoint(body, policy=cp.dots_saveable)(p, x)


def scan_block(p: Params, x: jax.Array) -> jax.Array:
    blk = jax.checkpoint(block, policy=cp.dots_saveable)

    def step(carry: jax.Array, _: None) -> tuple[jax.Array, None]:
        return blk(p, carry), None

    out, _ = jax.lax.scan(step, x, None, length=1)
    return out


def no_matmul_block(p: Params, x: jax.Array) -> jax.Array:
    """x·W1 without a dot_general: an elementwise product and a sum."""
    pre = jnp.sum(x[:, :, None] * p["w1"][None, :, :], axis=1) + p["b1"]
    return x + jnp.tanh(pre) @ p["w2"] + p["b2"]


def tanh_formula_block(p: Params, x: jax.Array) -> jax.Array:
    """tanh spelled out with exp: there is no tanh op to rematerialize."""
    z = x @ p["w1"] + p["b1"]
    e = jnp.exp(-2.0 * z)
    return x + ((1.0 - e) / (1.0 + e)) @ p["w2"] + p["b2"]


def transposed_block(p: Params, x: jax.Array) -> jax.Array:
    """x·W1 as (W1ᵀ·xᵀ)ᵀ: the product's operands come in the other order."""
    h = jnp.tanh((p["w1"].T @ x.T).T + p["b1"])
    return x + h @ p["w2"] + p["b2"]


def double_tanh_block(p: Params, x: jax.Array) -> jax.Array:
    """Two forward tanh of one product, no checkpoint: the dataflow signal alone is fooled
    (the spec-level rule catches this one)."""
    z = x @ p["w1"] + p["b1"]
    h = 0.5 * (jnp.tanh(z) + jnp.tanh(z + 0.0))
    return x + h @ p["w2"] + p["b2"]


def ckpt(policy: Any, **kw: Any) -> Callable[[Params, jax.Array], jax.Array]:
    return jax.checkpoint(block, policy=policy, **kw)


CASES: dict[str, Solve] = {
    "dots_saveable": with_block(ckpt(cp.dots_saveable)),
    "dots_saveable_nocse": with_block(ckpt(cp.dots_saveable, prevent_cse=False)),
    "remat_checkpoint_dots": with_block(jax.remat(block, policy=cp.checkpoint_dots)),
    "separate_loss_grad": separate,
    "einsum": with_block(jax.checkpoint(einsum_block, policy=cp.dots_saveable)),
    "dots_no_batch_dims": with_block(ckpt(cp.dots_with_no_batch_dims_saveable)),
    "inner_jit": with_block(inner_jit_block),
    "inner_jit_matmul": with_block(inner_jit_matmul_block),
    "scan": with_block(scan_block),
    "transposed_matmul": with_block(jax.checkpoint(transposed_block, policy=cp.dots_saveable)),
    "double_tanh_no_checkpoint": with_block(double_tanh_block),
    "nothing_saveable": with_block(ckpt(cp.nothing_saveable)),
    "no_policy": with_block(jax.checkpoint(block)),
    "everything_saveable": with_block(ckpt(cp.everything_saveable)),
    "no_checkpoint": with_block(block),
    "checkpoint_outside_grad": outside,
    "checkpoint_without_tanh": with_block(no_tanh_block),
    "decoy": with_block(decoy_block),
    "no_matmul": with_block(jax.checkpoint(no_matmul_block, policy=cp.dots_saveable)),
    "tanh_formula": with_block(jax.checkpoint(tanh_formula_block, policy=cp.dots_saveable)),
}


def generic_text(exported: Any) -> str:
    """The module text exactly as stage B produces it."""
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    with mlir.make_ir_context():
        module = ir.Module.parse(exported.mlir_module())
        return module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)


def main() -> None:
    rng = np.random.default_rng(0)
    params = {
        "w1": rng.standard_normal((D, H)).astype(np.float32),
        "b1": rng.standard_normal((H,)).astype(np.float32),
        "w2": rng.standard_normal((H, D)).astype(np.float32),
        "b2": rng.standard_normal((D,)).astype(np.float32),
    }
    x = rng.standard_normal((B, D)).astype(np.float32)
    y = rng.standard_normal((B, D)).astype(np.float32)
    only = set(sys.argv[1:])
    for name, solve in CASES.items():
        if only and name not in only:
            continue
        exported = jax_export.export(jax.jit(solve))(params, x, y)
        exported = jax_export.deserialize(exported.serialize())
        args = [ARG_PATHS[i] for i in sorted(exported.module_kept_var_idx)]
        stem = f"{name}-jax{jax.__version__}"
        text = generic_text(exported).encode("utf-8")
        (HERE / f"{stem}.mlir.gz").write_bytes(gzip.compress(text, compresslevel=9, mtime=0))
        meta = {"signature": f"B={B},D={D},H={H}", "args": args}
        (HERE / f"{stem}.json").write_text(json.dumps(meta) + "\n", encoding="utf-8")
        print(stem)


if __name__ == "__main__":
    main()
