"""What a grade derives from the problem package and the mode alone: tests grouped by input
signature, the symbolic signature (or none, for static-shape rules), each output's dtype and
tolerance, stage B's test list. Built once per package version and shared: read-only."""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from jaxjudge.grading.report import Mode
from jaxjudge.problems.package import Problem, TestCase
from jaxjudge.rules import RULES


def _spec_of(value: Any, problem: Problem, argument: str, key: str | None = None) -> Any:
    """Input value tree -> spec tree of {"shape", "dtype"} leaves, with the element types the
    problem declares for that argument (and key)."""
    if isinstance(value, dict):
        return {k: _spec_of(v, problem, argument, k) for k, v in sorted(value.items())}
    shape: list[int] = []
    v = value
    while isinstance(v, list):
        shape.append(len(v))
        v = v[0] if v else None
    return {"shape": shape, "dtype": problem.input_dtype(argument, key)}


def signature_name(spec: list[Any], arg_names: list[str]) -> str:
    parts = []
    for name, s in zip(arg_names, spec, strict=False):
        if isinstance(s, dict) and "shape" in s:
            parts.append(f"{name}({', '.join(str(d) for d in s['shape'])})")
    return " ".join(parts) or "signature"


def _static_shapes(problem: Problem) -> bool:
    """Some requirement reads sizes or loop bounds, which only per-shape exports carry."""
    return any(RULES[r.rule].static_shapes for r in problem.requirements if r.rule in RULES)


def _dims_of(declared: Any, concrete: Any, into: dict[str, int]) -> dict[str, int]:
    """Named dimension -> value, matching a declared spec tree with a test's concrete one."""
    stack = [(declared, concrete)]
    while stack:
        d, c = stack.pop()
        if isinstance(d, dict) and "shape" in d and isinstance(c, dict) and "shape" in c:
            for name, value in zip(d["shape"], c["shape"], strict=False):
                if isinstance(name, str):
                    into.setdefault(name, int(value))
        elif isinstance(d, dict) and isinstance(c, dict):
            stack.extend((d[k], c[k]) for k in d if k in c)
        elif isinstance(d, list) and isinstance(c, list):
            stack.extend(zip(d, c, strict=False))
    return into


def _symbolic_spec(problem: Problem) -> dict[str, Any] | None:
    """Argument specs with named dimensions, for one shape-polymorphic export (None if the
    problem does not declare every argument's shape)."""
    args: list[Any] = []
    dims: set[str] = set()
    default = problem.constraints.dtype
    for arg in problem.arguments:
        if arg.shapes is not None:
            node: Any = {
                k: {"shape": v, "dtype": arg.leaf_dtype(k, default)}
                for k, v in sorted(arg.shapes.items())
            }
            shapes = list(arg.shapes.values())
        elif arg.shape is not None:
            node = {"shape": arg.shape, "dtype": arg.leaf_dtype(None, default)}
            shapes = [arg.shape]
        else:
            return None
        for shape in shapes:
            dims.update(d for d in shape if isinstance(d, str))
        args.append(node)
    return {"dims": sorted(dims), "args": args}


def _concrete(node: Any, dims: dict[str, int]) -> Any:
    """A declared spec tree at given dimension values (named dims replaced by numbers)."""
    if isinstance(node, dict) and "shape" in node:
        return {**node, "shape": [dims[d] if isinstance(d, str) else d for d in node["shape"]]}
    if isinstance(node, dict):
        return {k: _concrete(v, dims) for k, v in node.items()}
    return [_concrete(v, dims) for v in node]


def _probes(problem: Problem, declared: dict[str, Any] | None,
            signatures: dict[str, dict[str, Any]]
            ) -> tuple[list[dict[str, Any]], frozenset[str], dict[str, dict[str, int]]]:
    """The judge's probe shapes (jaxjudge.rules.growth): the ones no test has, to export beside
    the tests' signatures; the ids of every program at a probe shape (a test signature that
    is one included, so it is not exported twice); and the probes' dimension values."""
    wanted = problem.probes()
    if not wanted or declared is None:
        return [], frozenset(), {}
    extra: list[dict[str, Any]] = []
    ids: set[str] = set()
    dims: dict[str, dict[str, int]] = {}
    for pid, values in wanted.items():
        args = _concrete(declared["args"], values)
        same = signatures.get(json.dumps(args, sort_keys=True))
        if same is not None:
            ids.add(same["id"])
            continue
        extra.append({"id": pid, "args": args})
        ids.add(pid)
        dims[pid] = dict(values)
    return extra, frozenset(ids), dims


@dataclass(frozen=True)
class Plan:
    """What a grade derives from the problem package and the mode alone, built once per package
    version: the tests, grouped by input signature (one export and one compile per distinct
    shape), the symbolic signature, and stage B's test list with the digest of its JSON.
    Shared between grades: read-only."""

    cases: list[TestCase]
    arg_names: list[str]
    signatures: dict[str, dict[str, Any]]  # signature JSON -> {"id", "args"}
    case_sig: dict[str, str]  # test name -> signature id
    symbolic: dict[str, Any] | None  # None: export once per signature (static shapes)
    sig_dims: dict[str, dict[str, int]]  # signature id -> named dimensions' values
    outputs: dict[str, tuple[str, float, float]]  # output path -> (dtype, rtol, atol)
    default_leaf: tuple[str, float, float]  # for a path `returns` does not declare
    # Shapes the judge exports for the growth check when it exports per shape (no tests run
    # on them), and the ids (signatures' or probes') of every program at a probe shape.
    probes: list[dict[str, Any]]  # [{"id": "p0", "args": [...]}, ...]
    probe_ids: frozenset[str]

    def output_leaf(self, path: str) -> tuple[str, float, float]:
        return self.outputs.get(path, self.default_leaf)
    tests: list[dict[str, Any]]
    tests_digest: str
    # The problem's own test signature with the most input elements (a learner's own inputs
    # left out): where a symbolic program is specialised for the memory profile, so the
    # submission and the reference are sized at the same shapes.
    profile_sig: str | None = None
    # A learner's own inputs (`extra`): the reference's answers step by step were measured on
    # the problem's tests only, so no trajectory follows these.
    custom: frozenset[str] = frozenset()


_plans: OrderedDict[tuple[str, ...], Plan] = OrderedDict()
_plans_lock = threading.Lock()


def plan_for(problem: Problem, mode: Mode, extra: list[TestCase] | None = None) -> Plan:
    """The plan of `mode`, shared; with `extra` (a learner's own inputs) a private one."""
    if extra:
        return _build(problem, [*problem.cases(mode), *extra], {c.name for c in extra})
    # The files on disk (fingerprint) and this in-memory package's arguments (a Problem loaded
    # before problem.toml was edited must not share the new version's plan).
    args = repr([(a.name, a.shape, a.shapes, a.dtype, a.dtypes) for a in problem.arguments])
    key = (str(problem.root), problem.fingerprint(), mode, args)
    with _plans_lock:
        found = _plans.get(key)
        if found is not None:
            _plans.move_to_end(key)
            return found
    plan = _build(problem, problem.cases(mode))
    with _plans_lock:
        _plans[key] = plan
        while len(_plans) > 64:
            _plans.popitem(last=False)
    return plan


def _elements(spec: Any) -> int:
    """All input elements of one signature's spec tree."""
    if isinstance(spec, dict) and "shape" in spec:
        return math.prod(spec["shape"])
    items = spec.values() if isinstance(spec, dict) else spec
    return sum(_elements(v) for v in items)


def _largest(signatures: dict[str, dict[str, Any]], case_sig: dict[str, str],
             custom: set[str]) -> str | None:
    own = {sid for name, sid in case_sig.items() if name not in custom}
    found = [s for s in signatures.values() if s["id"] in own]
    return max(found, key=lambda s: _elements(s["args"]))["id"] if found else None


def _build(problem: Problem, cases: list[TestCase], custom: set[str] | None = None) -> Plan:
    arg_names = [a.name for a in problem.arguments]
    signatures: dict[str, dict[str, Any]] = {}
    case_sig: dict[str, str] = {}
    for case in cases:
        spec = [_spec_of(case.inputs[name], problem, name) for name in arg_names]
        skey = json.dumps(spec, sort_keys=True)
        if skey not in signatures:
            signatures[skey] = {"id": f"s{len(signatures)}", "args": spec}
        case_sig[case.name] = signatures[skey]["id"]
    tests = [
        {"name": c.name, "signature": case_sig[c.name], "inputs": [c.inputs[n] for n in arg_names]}
        for c in cases
    ]
    digest = hashlib.sha256(json.dumps(tests, sort_keys=True).encode()).hexdigest()
    declared = _symbolic_spec(problem)
    sig_dims = {
        s["id"]: _dims_of(declared["args"], s["args"], {}) if declared else {}
        for s in signatures.values()
    }
    symbolic = None if _static_shapes(problem) else declared
    probes, probe_ids, probe_dims = _probes(problem, declared, signatures)
    sig_dims.update(probe_dims)
    outputs = {
        path: (dtype, *problem.tolerance.for_output(path))
        for path, dtype in problem.output_dtypes().items()
    }
    default_leaf = (problem.constraints.dtype, problem.tolerance.rtol, problem.tolerance.atol)
    return Plan(cases, arg_names, signatures, case_sig, symbolic, sig_dims, outputs,
                default_leaf, probes, probe_ids, tests, digest,
                _largest(signatures, case_sig, custom or set()), frozenset(custom or ()))


