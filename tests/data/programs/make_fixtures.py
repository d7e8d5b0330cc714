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

import contextlib
import gzip
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.experimental
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


def zero_weighted_decoy(params: Params, x: jax.Array) -> Params:
    """grad(checkpoint(tanh(x @ W1 + b1), dots_saveable)): a real rematerialization of its own
    product, computed next to the block and added to the gradients times zero."""
    fn = jax.checkpoint(lambda p: jnp.tanh(x @ p["w1"] + p["b1"]), policy=cp.dots_saveable)
    g = jax.grad(lambda p: jnp.sum(fn(p)))(params)
    return jax.tree_util.tree_map(lambda v: 0.0 * v, g)


def with_decoy(block_fn: Callable[[Params, jax.Array], jax.Array]) -> Solve:
    inner = with_block(block_fn)

    def solve(params: Params, x: jax.Array, y: jax.Array) -> dict[str, Any]:
        out = inner(params, x, y)
        decoy = zero_weighted_decoy(params, x)
        out["grads"] = jax.tree_util.tree_map(jnp.add, out["grads"], decoy)
        return out

    return solve


def duplicate_forward_block(p: Params, x: jax.Array) -> jax.Array:
    """The review's attack: no checkpoint, the forward tanh computed twice, the copy weighted
    by zero (so a product feeds two tanh ops)."""
    z = x @ p["w1"] + p["b1"]
    h = jnp.tanh(z) + 0.0 * jnp.tanh(z)
    return x + h @ p["w2"] + p["b2"]


def paired_decoy(params: Params, x: jax.Array, y: jax.Array) -> dict[str, Any]:
    """No rematerialization, plus a hand-made 'recomputed' tanh of the very same product that
    meets a value of the forward pass and reaches the gradients (times zero)."""
    z = x @ params["w1"] + params["b1"]

    def loss_fn(p: Params) -> jax.Array:
        return mse(x + jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"], y)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    fake = jnp.tanh(z) * (0.0 * loss)
    grads = dict(grads, b1=grads["b1"] + jnp.sum(fake, axis=0))
    return {"loss": loss, "grads": grads}


def separate_plain_grad_decoy(params: Params, x: jax.Array, y: jax.Array) -> dict[str, Any]:
    """Loss computed alone, gradients by plain jax.grad (no checkpoint), and a decoy pair on the
    loss's product: a tanh of it that meets the loss's forward values and reaches the grads."""
    z = x @ params["w1"] + params["b1"]
    h = jnp.tanh(z)
    loss = mse(x + h @ params["w2"] + params["b2"], y)
    grads = jax.grad(lambda p: mse(block(p, x), y))(params)
    fake = jnp.tanh(z) * (0.0 * loss)
    grads = dict(grads, b1=grads["b1"] + jnp.sum(fake, axis=0))
    return {"loss": loss, "grads": grads}


def row_loss(p: Params, xi: jax.Array, yi: jax.Array, n: int) -> jax.Array:
    blk = jax.checkpoint(block, policy=cp.dots_saveable)
    return jnp.sum((blk(p, xi[None]) - yi[None]) ** 2) / n


def scan_rows(params: Params, x: jax.Array, y: jax.Array) -> dict[str, Any]:
    """Microbatching: the checkpointed block on one row at a time inside lax.scan."""

    def loss_fn(p: Params) -> jax.Array:
        def step(acc: jax.Array, xy: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, None]:
            return acc + row_loss(p, xy[0], xy[1], x.size), None

        total, _ = jax.lax.scan(step, jnp.zeros((), x.dtype), (x, y))
        return total

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return {"loss": loss, "grads": grads}


def fori_rows(params: Params, x: jax.Array, y: jax.Array) -> dict[str, Any]:
    """Gradient accumulation: value_and_grad per row inside lax.fori_loop."""
    vg = jax.value_and_grad(row_loss)

    def body(i: jax.Array, carry: tuple[jax.Array, Params]) -> tuple[jax.Array, Params]:
        loss, grads = carry
        li, gi = vg(params, x[i], y[i], x.size)
        return loss + li, jax.tree_util.tree_map(jnp.add, grads, gi)

    zero = (jnp.zeros((), x.dtype), jax.tree_util.tree_map(jnp.zeros_like, params))
    loss, grads = jax.lax.fori_loop(0, x.shape[0], body, zero)
    return {"loss": loss, "grads": grads}


def map_rows(params: Params, x: jax.Array, y: jax.Array) -> dict[str, Any]:
    """Per-row value_and_grad under lax.map, then summed."""
    vg = jax.value_and_grad(row_loss)
    losses, grads = jax.lax.map(lambda xy: vg(params, xy[0], xy[1], x.size), (x, y))
    return {"loss": jnp.sum(losses), "grads": jax.tree_util.tree_map(lambda g: g.sum(0), grads)}


def vmap_rows(params: Params, x: jax.Array, y: jax.Array) -> dict[str, Any]:
    """Per-example value_and_grad under vmap, then summed."""
    vg = jax.value_and_grad(row_loss)
    losses, grads = jax.vmap(vg, in_axes=(None, 0, 0, None))(params, x, y, x.size)
    return {"loss": jnp.sum(losses), "grads": jax.tree_util.tree_map(lambda g: g.sum(0), grads)}


def jacrev_grads(params: Params, x: jax.Array, y: jax.Array) -> dict[str, Any]:
    blk = jax.checkpoint(block, policy=cp.dots_saveable)

    def loss_fn(p: Params) -> jax.Array:
        return mse(blk(p, x), y)

    return {"loss": loss_fn(params), "grads": jax.jacrev(loss_fn)(params)}


def float64_block(p: Params, x: jax.Array) -> jax.Array:
    h = jnp.tanh(x.astype(jnp.float64) @ p["w1"].astype(jnp.float64) + p["b1"])
    return (x + h @ p["w2"] + p["b2"]).astype(jnp.float32)


def _fake_pair(params: Params, x: jax.Array, grads: Params) -> Params:
    """A hand-made 'rematerialization' pair on a fresh x@W1: a tanh feeding a contraction, and
    a second tanh of the same product read against that contraction, into grads times zero."""
    z = x @ params["w1"] + params["b1"]
    s = jnp.sum(jnp.tanh(z) @ params["w2"])
    return dict(grads, b1=grads["b1"] + jnp.sum(jnp.tanh(z) * (0.0 * s), axis=0))


def laundered(activation: Callable[[jax.Array], jax.Array],
              matmul: Callable[[jax.Array, jax.Array], jax.Array] = jnp.matmul) -> Solve:
    """No checkpoint at all, the activation or the product disguised, plus a fake pair."""

    def solve(params: Params, x: jax.Array, y: jax.Array) -> dict[str, Any]:
        def loss_fn(p: Params) -> jax.Array:
            h = activation(matmul(x, p["w1"]) + p["b1"])
            return mse(x + h @ p["w2"] + p["b2"], y)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        return {"loss": loss, "grads": _fake_pair(params, x, grads)}

    return solve


def manual_saved_backward(params: Params, x: jax.Array, y: jax.Array) -> dict[str, Any]:
    """A hand-written backward that reuses the forward tanh through an identity clamp."""
    z = x @ params["w1"] + params["b1"]
    h = jnp.tanh(z)
    err = x + h @ params["w2"] + params["b2"] - y
    loss = jnp.mean(err * err)
    kept = jax.lax.clamp(-1.0, h, 1.0)
    d_out = 2.0 * err / err.size
    dz = (d_out @ params["w2"].T) * (1.0 - kept * kept)
    grads = {"w1": x.T @ dz, "b1": dz.sum(0), "w2": kept.T @ d_out, "b2": d_out.sum(0)}
    return {"loss": loss, "grads": _fake_pair(params, x, grads)}


def hidden_only_block(p: Params, x: jax.Array) -> jax.Array:
    """Only tanh(x@W1 + b1) is checkpointed; h @ W2 outside keeps the forward tanh alive."""
    h = jax.checkpoint(lambda p, x: jnp.tanh(x @ p["w1"] + p["b1"]),
                       policy=cp.dots_saveable)(p, x)
    return x + h @ p["w2"] + p["b2"]


def clipped_block(p: Params, x: jax.Array) -> jax.Array:
    """An honest remat whose pre-activation is clipped "for safety" (same values)."""
    h = jnp.tanh(jnp.clip(x @ p["w1"] + p["b1"], -30.0, 30.0))
    return x + h @ p["w2"] + p["b2"]


def python_rows(params: Params, x: jax.Array, y: jax.Array) -> dict[str, Any]:
    """An honest remat applied row by row in a Python loop (concrete shapes only)."""
    blk = jax.checkpoint(block, policy=cp.dots_saveable)

    def loss_fn(p: Params) -> jax.Array:
        rows = [blk(p, x[i : i + 1]) for i in range(x.shape[0])]
        return mse(jnp.concatenate(rows), y)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return {"loss": loss, "grads": grads}


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
    # The review's attacks: each must fail although a product feeds two tanh ops.
    "decoy_duplicate_forward": with_decoy(duplicate_forward_block),
    "decoy_nothing_saveable": with_decoy(ckpt(cp.nothing_saveable)),
    "decoy_paired": paired_decoy,
    "decoy_separate_plain_grad": separate_plain_grad_decoy,
    # Honest styles that must pass: loops over rows (exported with a symbolic batch, as stage A
    # does), per-example gradients, jacrev, float64 inside the block, a decoy next to a real one.
    "scan_rows": scan_rows,
    "fori_rows": fori_rows,
    "map_rows": map_rows,
    "vmap_rows": vmap_rows,
    "jacrev": jacrev_grads,
    "float64_block": with_block(jax.checkpoint(float64_block, policy=cp.dots_saveable)),
    "real_with_decoy": with_decoy(ckpt(cp.dots_saveable)),
    # The red team's round: disguises of a saved forward activation beside a fake pair, and
    # honest styles the first version of the rule rejected.
    "launder_clamp": laundered(lambda z: jax.lax.clamp(-1.0, jnp.tanh(z), 1.0)),
    "launder_sigmoid": laundered(lambda z: 2.0 * jax.nn.sigmoid(2.0 * z) - 1.0),
    "launder_scaled_w1": laundered(jnp.tanh, lambda a, w: a @ (w * 1.0)),
    "launder_manual_backward": manual_saved_backward,
    "hidden_layer_only": with_block(hidden_only_block),
    "clipped_preactivation": with_block(jax.checkpoint(clipped_block, policy=cp.dots_saveable)),
    "python_rows": python_rows,
}
# Exported with symbolic B, D, H like stage A's first try (loops over a symbolic batch slice
# with real_dynamic_slice).
SYMBOLIC = {"scan_rows", "fori_rows", "map_rows", "vmap_rows", "dots_saveable"}


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
        for symbolic in (False, True) if name in SYMBOLIC else (False,):
            write(name, solve, symbolic, (params, x, y))


def write(name: str, solve: Solve, symbolic: bool, args: tuple[Any, ...]) -> None:
    specs: Any = args
    signature = f"B={B},D={D},H={H}"
    if symbolic:
        b, d, h = jax_export.symbolic_shape("B, D, H")
        dims = {B: b, D: d, H: h}
        specs = jax.tree_util.tree_map(
            lambda a: jax.ShapeDtypeStruct(tuple(dims[n] for n in a.shape), a.dtype), args)
        name, signature = f"{name}_poly", "B,D,H"
    x64 = getattr(jax.experimental, "enable_x64", None) or jax.enable_x64  # moved after 0.4
    with x64(True) if "float64" in name else contextlib.nullcontext():
        exported = jax_export.export(jax.jit(solve))(*specs)
    exported = jax_export.deserialize(exported.serialize())
    kept = [ARG_PATHS[i] for i in sorted(exported.module_kept_var_idx)]
    n_out = len(exported.out_avals)
    leaves = jax.tree_util.tree_flatten_with_path(
        jax.tree_util.tree_unflatten(exported.out_tree, list(range(n_out))))[0]
    outs = [".".join(str(getattr(k, "key", getattr(k, "idx", k))) for k in p) for p, _ in leaves]
    stem = f"{name}-jax{jax.__version__}"
    text = generic_text(exported).encode("utf-8")
    (HERE / f"{stem}.mlir.gz").write_bytes(gzip.compress(text, compresslevel=9, mtime=0))
    meta = {"signature": signature, "args": kept, "outs": outs}
    (HERE / f"{stem}.json").write_text(json.dumps(meta) + "\n", encoding="utf-8")
    print(stem)


if __name__ == "__main__":
    main()
