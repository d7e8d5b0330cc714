"""Which runs stage B observes (jaxjudge/stages/observe.py), and its observations read back.

A `loop_over_dim` requirement with `every_step` or `sliced` is decided from the program text
and from one observed run: the test whose signature gives the loop the most steps (up to
MAX_OBSERVED_STEPS), with one variant per step share of the sliced inputs and one per step.
A `no_loop_over_dim` requirement gets one run per dimension, one variant per index along it.
"""

from __future__ import annotations

import logging
from typing import Any

from jaxjudge.grading.stage_results import ObservedResult
from jaxjudge.problems.package import Problem
from jaxjudge.rules.expr import Expr
from jaxjudge.rules.observed import LoopRun, Observation, Slot

log = logging.getLogger("grader")

MAX_OBSERVED_STEPS = 48
MAX_VISITED = 64  # indices of a no_loop_over_dim dimension, one variant each


def observe_specs(problem: Problem, plan: Any, program_of: dict[str, str]) -> list[dict[str, Any]]:
    """Stage B's `observe` entries for this problem and plan (empty when no rule asks).

    program_of: signature id -> the program id that runs it."""
    specs: list[dict[str, Any]] = []
    tests_of: dict[str, str] = {}
    for test in plan.tests:
        tests_of.setdefault(test["signature"], test["name"])
    for req in problem.requirements:
        if req.rule == "rematerialized_activation" and req.level == "program" and tests_of:
            sid, name = next(iter(tests_of.items()))  # one run: the first test
            specs.append({"id": f"r{len(specs)}", "program": program_of.get(sid, sid),
                          "test": name, "kind": "activation", "count": 0, "sliced": [],
                          "op": str(req.options.get("activation", "tanh")).split(".")[-1],
                          "groups": [], "inject": 0, "watch": []})
            continue
        if req.rule == "no_loop_over_dim" and req.level == "program":
            for dim in req.options.get("dims") or ():
                specs += _visit_specs(problem, plan, tests_of, program_of, dim, len(specs))
            continue
        if req.rule != "loop_over_dim" or req.level != "program":
            continue
        opts = req.options
        sliced = tuple(opts.get("sliced") or ())
        if not (opts.get("every_step") or sliced):
            continue
        dim = opts.get("dim")
        count: Expr = opts.get("trip_count") or Expr(str(dim))
        best: tuple[int, str] | None = None
        for sid in tests_of:
            try:
                want = int(count.value(plan.sig_dims.get(sid, {})))
            except (KeyError, ZeroDivisionError, ValueError):
                continue
            if 2 <= want <= MAX_OBSERVED_STEPS and (best is None or want > best[0]):
                best = (want, sid)
        if best is None:
            continue
        want, sid = best
        groups = _groups(problem, sliced, dim, plan.sig_dims.get(sid, {}), want)
        if groups is None:
            continue
        watch = sorted(set(opts.get("depends_on") or ()) | set(sliced))
        specs.append({"id": f"r{len(specs)}", "program": program_of.get(sid, sid),
                      "test": tests_of[sid], "count": want, "sliced": list(sliced),
                      "groups": groups, "inject": want, "watch": watch})
    return specs


def _visit_specs(problem: Problem, plan: Any, tests_of: dict[str, str],
                 program_of: dict[str, str], dim: str, n: int) -> list[dict[str, Any]]:
    """Per input that has `dim`, one variant per index along it, on the test with the most
    (up to MAX_VISITED): a loop whose state takes the indices up at different steps visits
    the dimension one slice at a time, however it picks them. Each input gets its own run, so
    one that every step reads whole (w in H v) does not hide one read a slice at a time."""
    by_size: dict[int, str] = {}
    for sid in tests_of:
        size = plan.sig_dims.get(sid, {}).get(dim)
        if size is not None and 2 <= size <= MAX_VISITED:
            by_size.setdefault(size, sid)
    if not by_size:
        return []
    size = max(by_size)
    sid = by_size.pop(size)
    inputs = [x for x in problem.arguments if x.shape is not None and dim in x.shape
              and _floating(x.dtype or problem.constraints.dtype)]
    specs = [{"id": f"r{n + i}", "program": program_of.get(sid, sid), "test": tests_of[sid],
              "count": size, "sliced": [], "dim": dim, "inject": 0, "watch": [a.name],
              "own": True, "groups": [{"path": a.name, "axis": a.shape.index(dim), "size": 1}]}
             for i, a in enumerate(inputs)]
    # Code written once per index only at some sizes (a Python loop at odd or small sizes):
    # every input's index changed together, at up to MORE_SIZES other sizes the tests have.
    for size in _spread(sorted(by_size), MORE_SIZES):
        sid = by_size[size]
        specs.append({"id": f"r{n + len(specs)}", "program": program_of.get(sid, sid),
                      "test": tests_of[sid], "count": size, "sliced": [], "dim": dim,
                      "inject": 0, "watch": [a.name for a in inputs], "own": True,
                      "groups": [{"path": a.name, "axis": a.shape.index(dim), "size": 1}
                                 for a in inputs]})
    return specs


MORE_SIZES = 4


def _spread(sizes: list[int], k: int) -> list[int]:
    """Up to k of `sizes` (ascending): the smallest of each parity first, then spread."""
    if len(sizes) <= k:
        return sizes
    picked = [s for s in (next((s for s in sizes if s % 2 == p), None) for p in (0, 1))
              if s is not None]
    rest = [s for s in sizes if s not in picked]
    step = len(rest) / max(1, k - len(picked))
    picked += [rest[int(i * step)] for i in range(k - len(picked))]
    return sorted(set(picked))


def _floating(dtype: str) -> bool:
    """Values, not lengths or indices: a mask from `lengths` takes effect at the step where it
    flips, which says nothing about how the loop walks the dimension."""
    return dtype.startswith(("float", "bfloat", "complex"))


def _groups(problem: Problem, sliced: tuple[str, ...], dim: str | None, dims: dict[str, int],
            want: int) -> list[dict[str, Any]] | None:
    """One entry per sliced input: its axis along `dim` and the rows of one step's share."""
    if not sliced:
        return []
    if dim is None or dim not in dims or dims[dim] % want:
        return None
    out = []
    for path in sliced:
        arg = next((a for a in problem.arguments if a.name == path), None)
        if arg is None or arg.shape is None or dim not in arg.shape:
            return None
        out.append({"path": path, "axis": arg.shape.index(dim), "size": dims[dim] // want})
    return out


def observations(result: dict[str, ObservedResult] | None, specs: list[dict[str, Any]],
                 program: str) -> tuple[Observation, ...]:
    """Stage B's validated observations of `program`, as the rules read them."""
    if not result:
        return ()
    out = []
    for spec in specs:
        got = result.get(spec["id"])
        if got is None or spec["program"] != program:
            continue
        if got.status == "error":  # the observer broke: our bug, the requirement fails
            log.warning("stage B's observer failed on %s: %s", spec["id"], got.reason)
        loops = tuple(
            LoopRun(index=r.index, depth=r.depth, steps=r.steps, entry=tuple(r.entry),
                    entry_max=tuple(r.entry_max), exit=tuple(r.exit), work=tuple(r.work),
                    slots=tuple(Slot(first=tuple(sl.first), touches=tuple(sl.touches),
                                     kept=tuple(sl.kept), live=sl.live) for sl in r.slots))
            for r in got.loops
        )
        out.append(Observation(count=spec["count"], sliced=tuple(spec["sliced"]),
                               dim=spec.get("dim", ""),
                               watched=",".join(spec.get("watch", [])) if spec.get("dim") else "",
                               private=tuple(got.private),
                               test=spec["test"], status=got.status, reason=got.reason,
                               groups=got.groups, group_elements=got.group_elements,
                               outputs=tuple(got.outputs),
                               loops=loops, kind=spec.get("kind", "loop"),
                               activations=tuple(tuple(a) for a in got.activations)))
    return tuple(out)
