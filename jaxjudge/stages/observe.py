"""Stage B's observer (TRUSTED code, untrusted data): what the program does when it runs.

The program-level rules prove requirements from the program text; a requirement about what the
program *does* (a loop that does its work at every step, reading one slice of an input per
step) can be walked around by a copy or a gate the text analysis cannot follow. So stage B also
runs the verified program on one test's inputs here, on an evaluator of our own that sees every
step of every loop, in many variants at once:

- variant 0 is the test's inputs;
- a "group" variant changes one slice of the named inputs (rows `g*size .. (g+1)*size` along
  their axis): where its values differ from variant 0 is where that slice reached;
- an "inject" variant s changes, at step s of every outermost loop only, the values the loop
  passes along unchanged from outside (the inputs a scan or fori_loop reads): whether the
  loop's state at the end of step s differs says whether step s's work on them was kept.

A value differs when its numbers differ, so a copy by gather, permutation, convolution or a
round trip through complex numbers carries the change, and a gate made of data zeros, a
`min(|x|, 0)`, or a product with zero carries none: this is dependence as executed, not as
written. Each outermost loop's record (per step, per group) goes back to the parent, which
decides (jaxjudge.rules.observed). Any op we do not evaluate, or a program past the budget,
ends the observation with a reason: the parent then decides from the text alone.

Run by path from execute.py (runpy): stdlib and numpy only, plus jaxlib's MLIR bindings that
stage B already loaded, passed in.
"""

import importlib.util
import math
import os
from typing import Any

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name: str):
    """A sibling file as a module, through the import machinery (its compiled bytecode)."""
    spec = importlib.util.spec_from_file_location(f"jaxjudge_{name}",
                                                  os.path.join(_HERE, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_ev = vars(_load("evaluator"))
Evaluator = _ev["Evaluator"]
Unobservable = _ev["Unobservable"]
OverBudget = _ev["OverBudget"]
MAX_VARIANTS = _ev["MAX_VARIANTS"]
_changed = _ev["_changed"]
_moved = _ev["_moved"]
_load("evaluator_regions").install(Evaluator, Unobservable)


def observe(text: str, inputs: list[np.ndarray], groups: list[dict[str, int]],
            inject_steps: int, ir, hlo, mlir_context,
            watched: list[int] | None = None) -> dict[str, Any]:
    """Run `text`'s main on `inputs` (main's arguments, in order) and its variants.

    groups: [{"arg": main argument index, "axis": a, "size": rows per group, "count": n}]; all
    entries' group g are changed together (k and v's block g). inject_steps: how many steps of
    each loop get an inject variant, which changes at that step only the values the loop
    passes along that move with the watched inputs (main argument indices; default: the
    grouped ones)."""
    count = max((g["count"] for g in groups), default=0)
    count = min(count, 64)
    inject_steps = min(inject_steps, 64)
    whole = 1 + count
    V = 2 + count + 2 * inject_steps
    if V > MAX_VARIANTS:
        raise Unobservable("too many variants")
    rng = np.random.default_rng(1205)
    args = [np.repeat(np.asarray(x)[None], V, axis=0) for x in inputs]
    for g in range(count):
        for spec in groups:
            arr = args[spec["arg"]]
            lo, hi = g * spec["size"], (g + 1) * spec["size"]
            axis = spec["axis"] + 1
            index = [1 + g] + [slice(None)] * (arr.ndim - 1)
            index[axis] = slice(lo, hi)
            part = arr[tuple(index)]
            arr[tuple(index)] = _changed(part, rng)
    for i in (watched if watched is not None else sorted({g["arg"] for g in groups})):
        args[i][whole] = _changed(args[i][whole], rng)
    inject = {(level, s): 2 + count + level * inject_steps + s
              for level in (0, 1) for s in range(inject_steps)}
    with mlir_context:
        module = ir.Module.parse(text)
        ev = Evaluator(module, ir, hlo, V, inject, count, whole)
        outs = ev.run(args)
    return _summary(ev, outs, count, inject_steps, groups, inputs)


def _moved_count(values: list[np.ndarray], v: int) -> int:
    return int(sum(int(_moved(x[v], x[0]).sum()) for x in values))


def _first_changes(counts: list[list[int]], entry: list[int], groups: int) -> list[int | None]:
    """Per group: the first step after which more of the loop's state moved with it than at
    any point before (the step that first computed with it, not one that copied it along)."""
    first: list[int | None] = []
    for g in range(groups):
        most, at = entry[g] if entry else 0, None
        for s, row in enumerate(counts):
            if row[g] > most:
                at = s
                break
        first.append(at)
    return first


def _summary(ev: Evaluator, outs, count: int, inject_steps: int, groups, inputs):
    group_elements = 0
    for spec in groups:
        shape = np.shape(inputs[spec["arg"]])
        group_elements += spec["size"] * math.prod(d for i, d in enumerate(shape)
                                                   if i != spec["axis"])
    loops = []
    for rec in ev.loops:
        loops.append({
            "index": int(rec["index"]),
            "depth": int(rec["depth"]),
            "steps": int(rec["steps"]),
            "entry": rec["entry"],
            "first": _first_changes(rec["counts"], rec["state_entry"], count),
            "exit": rec.get("exit", []),
            "whole_entry": int(rec["whole_entry"]),
            "kept": rec["kept"],
            "work": [int(w) for w in rec["work"]],
        })
    return {
        "status": "ok",
        "group_elements": int(group_elements),
        "groups": count,
        "outputs": [_moved_count(outs, 1 + g) for g in range(count)],
        "outside_work": int(ev.outside_work),
        "loops": loops,
    }


MAX_TAPS = 32


def observe_activations(text: str, inputs: list[np.ndarray], op_name: str, ir, hlo,
                        mlir_context) -> dict[str, Any]:
    """Change the result of each `op_name` op (every run of it) in a variant of its own, and
    say which outputs move: an activation recomputed for the backward pass moves the gradients
    and not the loss; the forward one moves both, and a decoy moves neither."""
    with mlir_context:
        module = ir.Module.parse(text)
        found: list[Any] = []

        def walk(op) -> None:
            if op.name == op_name:
                found.append(op)
            for region in op.regions:
                for block in region.blocks:
                    for inner in block.operations:
                        walk(inner.operation)

        walk(module.operation)
        if len(found) > MAX_TAPS:
            raise Unobservable(f"more than {MAX_TAPS} {op_name} ops")
        V = 1 + len(found)
        ev = Evaluator(module, ir, hlo, V, {})
        ev.taps = {op: 1 + i for i, op in enumerate(found)}
        args = [np.repeat(np.asarray(x)[None], V, axis=0) for x in inputs]
        outs = ev.run(args)
    moved = [[int(_moved(o[1 + i], o[0]).sum()) for o in outs] for i in range(len(found))]
    return {"status": "ok", "activations": moved}
