"""The shared part of every problem's `tests/generate.py`: a problem author writes the inputs'
distribution (and, ideally, an independent float64 truth); this module does the rest.

    from jaxjudge.authoring.testgen import Case, generate_main

    def hidden(rs):                 # numpy's legacy RandomState: a stream numpy never changes
        for n in (2, 8):
            yield Case(f"random-n{n}", {"x": rs.normal(size=(n,))}, note="...")

    if __name__ == "__main__":
        raise SystemExit(generate_main(__file__, examples=[...], hidden=hidden, seed=1,
                                       truth=lambda inputs: {...}))

It reads the package's `problem.toml` (argument and output element types, tolerances), casts
every input to its declared type, runs `jax.jit(reference.solve)` on the CPU, casts the outputs
to their declared types, refuses a case whose float32 result is not within a margin of the
float64 truth (a rounding knife-edge where two correct programs could disagree), and writes
`tests/cases.json` one case per line. A case whose dimensions the constraints do not allow
(out of range, or off a declared step such as `multiple_of = 4`) stops it. `--check`
regenerates in memory and fails if the stored file differs by more than half the tolerance
(another jax/XLA, or another CPU, may round the last bits differently, and a square root near
zero magnifies that: pairwise distances' `d` of identical points, stored on one machine, came
out 0.011 away on an AMD EPYC, with atol 0.1).

A generator may also define `adversarial(rs)`, yielding `Case`s like `hidden` (`rs` is
`RandomState(ADVERSARIAL_SEED)` of jaxjudge.authoring.margin): legal inputs where float32
rounding is worst (sums that cancel near zero, near-tied large scores, parameters at the ends of
their ranges). They are never written to cases.json nor graded: `jaxjudge check-problem`
measures on them, and on the tests, how much of the tolerance honest float32 programs use
(jaxjudge/authoring/margin.py).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from jaxjudge.problems.package import Problem, load_problem

CHECK_RTOL = 1e-6
CHECK_ATOL = 1e-6
CONDITIONING_MARGIN = 0.25


@dataclass
class Case:
    """One test: inputs by argument name (arrays, or dicts of arrays for dict arguments)."""

    name: str
    inputs: dict[str, Any]
    note: str = ""
    visible: bool = False
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. values the truth needs


Truth = Callable[[dict[str, Any]], Any]


def _cast(value: Any, problem: Problem, argument: str, key: str | None = None) -> Any:
    if isinstance(value, dict):
        return {k: _cast(v, problem, argument, k) for k, v in value.items()}
    return np.asarray(value, dtype=np.dtype(problem.input_dtype(argument, key)))


def to_json(value: Any) -> Any:
    """Arrays as nested lists of Python numbers: exact for every float32/bfloat16 value."""
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    arr = np.asarray(value)
    if arr.dtype.kind == "f" or arr.dtype.name == "bfloat16":
        return arr.astype(np.float64).tolist()
    if arr.dtype.kind == "b":
        return arr.tolist()
    return arr.astype(np.int64).tolist()


def check_dims(problem: Problem, name: str, inputs: dict[str, Any]) -> None:
    """Stop when a case's dimensions are not ones the constraints allow (`T = 18` where T is a
    multiple of 4): a test the statement does not promise would grade what it does not ask."""
    found: dict[str, int] = {}
    for arg in problem.arguments:
        value = inputs[arg.name]
        leaves = ([(arg.shape, value)] if arg.shape is not None else
                  [(shape, value[key]) for key, shape in (arg.shapes or {}).items()])
        for declared, leaf in leaves:
            for dim, size in zip(declared, np.shape(leaf), strict=False):
                if isinstance(dim, str):
                    found.setdefault(dim, int(size))
    broken = problem.constraints.violations(found)
    if broken:
        raise SystemExit(f"{name}: {broken[0]}")


def _leaves(tree: Any, path: str = "") -> list[tuple[str, Any]]:
    if isinstance(tree, dict):
        out = []
        for k in sorted(tree):
            out += _leaves(tree[k], f"{path}.{k}" if path else str(k))
        return out
    return [(path, tree)]


def _load_module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_cases(
    problem: Problem, cases: list[Case], *, seed: int, truth: Truth | None
) -> dict[str, Any]:
    """Every case with the reference's expected output, in order (examples first)."""
    import jax

    reference = _load_module(problem.reference_path, f"{problem.id}_reference")
    solve = jax.jit(getattr(reference, problem.entry_point))
    names = [a.name for a in problem.arguments]
    dtypes = problem.output_dtypes()
    out = []
    for case in cases:
        missing = sorted(set(names) - set(case.inputs))
        if missing:
            raise SystemExit(f"{case.name}: no value for argument(s) {missing}")
        inputs = {n: _cast(case.inputs[n], problem, n) for n in names}
        check_dims(problem, case.name, inputs)
        got = jax.device_get(solve(*(inputs[n] for n in names)))
        expected = _typed(got, dtypes, case.name)
        if truth is not None:
            _check_conditioning(problem, case.name, expected, truth({**inputs, **case.extra}))
        out.append({"name": case.name, "visible": case.visible, "inputs": to_json(inputs),
                    "expected": to_json(expected), "note": case.note})
    return {"generator": "tests/generate.py", "seed": seed, "cases": out}


def _typed(got: Any, dtypes: dict[str, str], name: str) -> Any:
    """The reference's outputs cast to the declared element types (a mismatch in structure is
    the reference's bug: stop)."""
    flat = dict(_leaves(got))
    if set(flat) != set(dtypes):
        raise SystemExit(f"{name}: the reference returns {sorted(flat)}, problem.toml declares "
                         f"{sorted(dtypes)}")

    def cast(node: Any, path: str) -> Any:
        if isinstance(node, dict):
            return {k: cast(v, f"{path}.{k}" if path else str(k)) for k, v in node.items()}
        return np.asarray(node).astype(np.dtype(dtypes[path]))

    return cast(got, "")


def _check_conditioning(problem: Problem, name: str, got: Any, truth: Any) -> None:
    truth_leaves = dict(_leaves(truth))
    for path, value in _leaves(got):
        if path not in truth_leaves:
            raise SystemExit(f"{name}: the float64 truth has no {path}")
        a = np.asarray(value, np.float64)
        t = np.asarray(truth_leaves[path], np.float64)
        if a.shape != t.shape:
            raise SystemExit(f"{name}: {path} has shape {a.shape}, the truth {t.shape}")
        if not np.all(np.isfinite(a)):
            raise SystemExit(f"{name}: {path} is not finite")
        rtol, atol = problem.tolerance.for_output(path)
        limit = CONDITIONING_MARGIN * (atol + rtol * np.abs(t))
        if np.any(np.abs(a - t) > limit):
            worst = float(np.max(np.abs(a - t) - limit))
            raise SystemExit(f"{name}: {path} is {worst:.3g} beyond the conditioning margin "
                             "of the float64 truth: the case sits on a rounding edge")


def dumps(data: dict[str, Any]) -> str:
    """One case per line: small diffs when a case changes, still plain JSON."""
    lines = ",\n".join("  " + json.dumps(c, allow_nan=False) for c in data["cases"])
    head = f'{{"generator": {json.dumps(data["generator"])}, "seed": {data["seed"]}, "cases": [\n'
    return head + lines + "\n]}\n"


def _close(a: Any, b: Any, rtol: float = CHECK_RTOL, atol: float = CHECK_ATOL) -> bool:
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a64.shape == b64.shape and bool(
        np.all(np.abs(a64 - b64) <= atol + rtol * np.abs(b64)))


def differences(
    fresh: dict[str, Any], stored: dict[str, Any], problem: Problem | None = None
) -> list[str]:
    """What differs between a regenerated and a stored cases.json (empty when they agree).
    Expected outputs may differ by half the problem's tolerance (at least 1e-6): JAX releases
    and CPUs round the last bits differently (fused multiply-adds, say)."""
    problems = []
    for key in ("generator", "seed"):
        if fresh[key] != stored.get(key):
            problems.append(f"{key}: stored {stored.get(key)!r}, generated {fresh[key]!r}")
    old_cases = stored.get("cases", [])
    if len(old_cases) != len(fresh["cases"]):
        problems.append(f"{len(old_cases)} stored cases, {len(fresh['cases'])} generated")
    for new, old in zip(fresh["cases"], old_cases, strict=False):
        for key in ("name", "visible", "inputs", "note"):
            if new[key] != old.get(key):
                problems.append(f"{new['name']}: {key} differs")
        old_leaves = dict(_leaves(old.get("expected", {})))
        for path, value in _leaves(new["expected"]):
            rtol, atol = problem.tolerance.for_output(path) if problem else (0.0, 0.0)
            rtol, atol = max(CHECK_RTOL, rtol / 2), max(CHECK_ATOL, atol / 2)
            if path not in old_leaves or not _close(value, old_leaves[path], rtol, atol):
                problems.append(f"{new['name']}: expected {path} differs beyond half the "
                                "tolerance")
    return problems


def generate_main(
    script: str,
    *,
    examples: list[Case],
    hidden: Callable[[np.random.RandomState], Iterable[Case]],
    seed: int,
    truth: Truth | None = None,
    argv: list[str] | None = None,
) -> int:
    """The command line of a problem's tests/generate.py (`script` is its `__file__`)."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    parser = argparse.ArgumentParser(description=f"Generate tests/cases.json ({script})")
    parser.add_argument("--check", action="store_true",
                        help="regenerate in memory and fail if cases.json differs")
    args = parser.parse_args(argv)
    package = Path(script).resolve().parent.parent
    problem = load_problem(package)
    for ex in examples:
        ex.visible = True
    cases = list(examples) + list(hidden(np.random.RandomState(seed)))
    seen: set[str] = set()
    for case in cases:
        if case.name in seen:
            raise SystemExit(f"two cases are named {case.name!r}")
        seen.add(case.name)
    fresh = build_cases(problem, cases, seed=seed, truth=truth)
    path = package / "tests" / "cases.json"
    if not args.check:
        path.write_text(dumps(fresh), encoding="utf-8")
        print(f"wrote {len(cases)} cases to {path}")
        return 0
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        problems = differences(fresh, stored, problem)
    except FileNotFoundError:
        problems = [f"{path} is missing: run the script without --check"]
    except (KeyError, TypeError, ValueError) as exc:
        problems = [f"cases.json is malformed: {exc!r}"]
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        print(f"{path} is out of date: rerun tests/generate.py", file=sys.stderr)
        return 1
    print(f"{path.name}: {len(cases)} cases reproduce")
    return 0
