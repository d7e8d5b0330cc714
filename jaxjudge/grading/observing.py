"""Which runs stage B observes (jaxjudge/stages/observe.py), and its observations read back.

A `loop_over_dim` requirement with `every_step` or `sliced` is decided from the program text
and from observed runs: one per program the tests run whose loop takes 2 to MAX_OBSERVED_STEPS
steps (one test of each signature), with one variant per step share of the sliced inputs and
one per step; each program is judged on its own run.
A `no_loop_over_dim` or `independent_of_dim` requirement gets one run per input with the
dimension, one variant per index along it, and runs at other sizes the tests have.
"""

from __future__ import annotations

import logging
from typing import Any

from jaxjudge.analysis.expr import Expr
from jaxjudge.analysis.observed import LoopRun, Observation, Slot
from jaxjudge.analysis.trajectory import Trajectory, kick_steps
from jaxjudge.grading.reference_work import over_budget
from jaxjudge.grading.stage_results import ObservedResult, TrajectoryLoop
from jaxjudge.problems.limits import asks_observer
from jaxjudge.problems.package import Problem

log = logging.getLogger("grader")

MAX_OBSERVED_STEPS = 48
# Programs (test signatures) observed per loop requirement: every one the problems have today
# (9 to 13), each judged on its own run.
MAX_OBSERVED_PROGRAMS = 16
MAX_VISITED = 64  # indices of a no_loop_over_dim dimension, one variant each


def observe_specs(problem: Problem, plan: Any, program_of: dict[str, str],
                  every: bool = False, kick_seed: int = 0) -> list[dict[str, Any]]:
    """Stage B's `observe` entries for this problem and plan (empty when no rule asks).

    program_of: signature id -> the program id that runs it. An entry with `candidates` is
    run on the one stage B picks (`_second_tests`). every: the reference's runs
    (jaxjudge.grading.reference_work): each entry a learner's grade may hold, once per test
    signature, whatever programs the tests share, and no picks (a pick's budget is the
    figure of its test's signature). kick_seed: the installation's secret the trajectory
    runs' kicks are drawn from (grading.observer_seed)."""
    specs: list[dict[str, Any]] = []
    tests_of: dict[str, str] = {}
    names_of: dict[str, list[str]] = {}
    for test in plan.tests:
        tests_of.setdefault(test["signature"], test["name"])
        names_of.setdefault(test["signature"], []).append(test["name"])
    for req in problem.requirements:
        opts = req.options
        if not asks_observer(req.rule, req.level, opts):  # as Problem.observed decides
            continue
        if req.rule == "rematerialized_activation" and tests_of:
            # the first test, and one test of another program the programs' hash picks (a
            # program honest at the first test's shape only is not safe there)
            sid = next(iter(tests_of))
            first = program_of.get(sid, sid)
            others = sorted(s for s in tests_of if program_of.get(s, s) != first)
            run = {"kind": "activation", "count": 0, "sliced": [], "groups": [], "inject": 0,
                   "op": str(opts.get("activation", "tanh")).split(".")[-1], "watch": [],
                   "req": req.name}
            if every:
                specs += [{**run, "id": f"r{len(specs) + k}", "program": program_of.get(sid, sid),
                           "test": tests_of[sid]} for k, sid in enumerate(tests_of)]
                continue
            specs.append({**run, "id": f"r{len(specs)}", "program": first,
                          "test": tests_of[sid]})
            if others:  # and one of the other programs, which stage B picks
                specs.append({**run, "id": f"r{len(specs)}", "program": program_of.get(
                    others[0], others[0]), "test": tests_of[others[0]], "primary": False,
                    "second": True, "salt": req.name,
                    "candidates": [{"program": program_of.get(o, o), "test": tests_of[o]}
                                   for o in others[:64]]})
            continue
        if req.rule in ("no_loop_over_dim", "independent_of_dim"):
            dims = opts.get("dims") or [opts.get("dim")]
            for dim in dims:
                specs += _visit_specs(problem, plan, tests_of, names_of, program_of, dim,
                                      len(specs), req.name, every)
            continue
        if req.rule != "loop_over_dim":
            continue
        sliced = tuple(opts.get("sliced") or ())
        dim = opts.get("dim")
        count: Expr = opts.get("trip_count") or Expr(str(dim))
        runs: list[tuple[int, str]] = []
        for sid in tests_of:
            try:
                want = int(count.value(plan.sig_dims.get(sid, {})))
            except (KeyError, ZeroDivisionError, ValueError):
                continue
            if 2 <= want <= MAX_OBSERVED_STEPS:
                runs.append((want, sid))
        # Every program the tests run, the most steps first: a program that does the work as
        # asked at one shape only and otherwise at other steps is seen where it does not.
        runs.sort(key=lambda r: -r[0])
        watch = sorted(set(opts.get("depends_on") or ()) | set(sliced))
        seen: set[str] = set()
        firsts: list[dict[str, Any]] = []
        for want, sid in runs:
            program = program_of.get(sid, sid)
            groups = _groups(problem, sliced, dim, plan.sig_dims.get(sid, {}), want)
            if groups is None or (program in seen and not every) or len(
                    firsts) >= MAX_OBSERVED_PROGRAMS:
                continue
            seen.add(program)
            first = {"id": f"r{len(specs)}", "program": program, "test": tests_of[sid],
                     "req": req.name,
                     "count": want, "sliced": list(sliced), "groups": groups,
                     "inject": want, "watch": watch, "primary": len(seen) == 1}
            specs.append(first)
            firsts.append({**first, "signature": sid})
        for extra in [] if every else _second_tests(firsts, names_of, req.name):
            specs.append({**extra, "id": f"r{len(specs)}"})
        if opts.get("trajectory"):
            own = {sid: [n for n in names if n not in plan.custom]
                   for sid, names in names_of.items()}
            restart = opts.get("trajectory_restart")  # a validated RestartFrom
            specs += _trajectory_specs(
                runs, own, program_of, req.name, len(specs), every,
                bool(opts.get("trajectory_response")), kick_seed,
                None if restart is None else {"input": restart.input, "output": restart.output,
                                              "any_scale": restart.any_scale})
    return specs


def _trajectory(loop: TrajectoryLoop) -> Trajectory:
    """A validated trajectory run's loop, as the rule reads it."""
    return Trajectory(index=loop.index, steps=loop.steps, rows=tuple(map(tuple, loop.rows)),
                      sizes=tuple(loop.sizes), at=tuple(loop.at),
                      states=tuple((s.step, s.slot, tuple(s.values)) for s in loop.states),
                      kicks=tuple((k.step, k.slot, k.sign, tuple(k.row)) for k in loop.kicks),
                      readouts=tuple((r.step, r.slot, r.sign, r.read, tuple(r.row))
                                     for r in loop.readouts),
                      restarts=tuple((r.step, r.slot, r.sign, r.read, r.offset, tuple(r.row))
                                     for r in loop.restarts))


def _trajectory_specs(runs: list[tuple[int, str]], names_of: dict[str, list[str]],
                      program_of: dict[str, str], req: str, n: int,
                      every: bool = False, response: bool = False,
                      kick_seed: int = 0,
                      restart: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """One trajectory run (stages/observe_trajectory.py) per test whose loop the requirement
    follows: the program of every signature on every one of its tests (the first test of each
    signature first; every one, never a silent subset), so that a program that does the steps only
    at some shapes, or only on some data (a sum above 10, an alpha near 1), is seen where it
    does not. The reference runs the same ones (its figures hold its answers step by step).
    Each is primary: no pick, and no test left to a hash a submitter could steer.
    response: the loops are also kicked between steps (analysis.trajectory's kick_steps; the
    reference after every step, one way: a learner's kick is compared with its kick there).
    restart ({"input", "output"}): a learner's program is also started again from each kicked
    state as that output reads it (the reference's own grade checks the reference the same
    way; its stored runs need none)."""
    order = [(want, sid, name, None) for want, sid in runs
             for name in names_of.get(sid, [])[:1]]
    # the other tests of a signature at a few steps only (a gate on data shows at any step)
    order += [(want, sid, name, [] if every else _few_steps(want)) for want, sid in runs
              for name in names_of.get(sid, [])[1:]]
    def kicks(want: int) -> dict[str, Any]:
        if not response:
            return {}
        if every:
            return {"kick_at": list(range(want + 1)), "kick_signs": [1], "kick_seed": kick_seed}
        return {"kick_at": kick_steps(want), "kick_signs": [1, -1], "kick_seed": kick_seed,
                **({"restart": dict(restart)} if restart else {})}

    return [{"id": f"r{n + k}", "kind": "trajectory", "program": program_of.get(sid, sid),
             "test": name, "req": req, "count": want, "sliced": [], "groups": [],
             "inject": 0, "watch": [], "primary": True, **({"at": at} if at else {}),
             **kicks(want)}
            for k, (want, sid, name, at) in enumerate(order)]


def _few_steps(n: int) -> list[int]:
    """The steps a test beside a signature's first is stopped after: every one for a loop of
    up to 16 steps (a step idle and the next doing two shows between them), else the start,
    the first two steps (work done at once, two per step), the middle, the last two and the
    end, which keeps a long loop's runs on many tests within the grade's observer total."""
    if n <= 16:
        return list(range(n + 1))
    return sorted({0, 1, 2, n // 2, n - 1, n} & set(range(n + 1)))


# Observed runs per grade: stage B's (observe.py's MAX_ENTRIES) and its result schema's bound.
# Runs planned past it are not skipped: each fails its requirement closed, saying why, and
# check-problem shows it on the reference (the problems ask for 48 at most today).
MAX_RUNS = 64


def _second_tests(firsts: list[dict[str, Any]], names_of: dict[str, list[str]],
                  salt: str) -> list[dict[str, Any]]:
    """Per first run, the same run on one more test of its signature: a program that switches
    its loop's work on data values only some tests have (alpha in a range, a score above 8) is
    not safe on the tests watched first. Stage B picks the test among `candidates` by a hash
    of the verified program text (no source locations: the same program, however its file is
    laid out or named, gets the same pick, so re-grades and the results cache agree) and
    `salt`, and says which (`ObservedResult.picked_program`, `picked_test`). Extra runs,
    never primary."""
    out = []
    for first in firsts:
        sid = first.pop("signature")
        others = sorted(name for name in names_of.get(sid, []) if name != first["test"])
        if others:
            out.append({**first, "candidates": [{"program": first["program"], "test": name}
                                                for name in others[:64]],
                        "salt": salt, "primary": False, "second": True})
    return out


def _visit_specs(problem: Problem, plan: Any, tests_of: dict[str, str],
                 names_of: dict[str, list[str]], program_of: dict[str, str], dim: str, n: int,
                 salt: str, every: bool = False) -> list[dict[str, Any]]:
    """Per input that has `dim`, one variant per index along it, on the test with the most
    (up to MAX_VISITED): a loop whose state takes the indices up at different steps visits
    the dimension one slice at a time, however it picks them. Each input gets its own run, so
    one that every step reads whole (w in H v) does not hide one read a slice at a time."""
    sized = sorted(((size, sid) for sid in tests_of
                    if (size := plan.sig_dims.get(sid, {}).get(dim)) is not None
                    and 2 <= size <= MAX_VISITED), key=lambda r: -r[0])
    if not sized:
        return []
    size, sid = sized[0]
    inputs = [x for x in problem.arguments if x.shape is not None and dim in x.shape
              and _floating(x.dtype or problem.constraints.dtype)]
    specs = [{"id": f"r{n + i}", "program": program_of.get(sid, sid), "test": tests_of[sid],
              "req": salt, "count": size, "sliced": [], "dim": dim, "inject": 0,
              "watch": [a.name],
              "own": True, "groups": [{"path": a.name, "axis": a.shape.index(dim), "size": 1}]}
             for i, a in enumerate(inputs)]
    # Code written once per index only at some shapes (a Python loop at odd sizes, or when
    # another dimension has some value): every input's index changed together, on the test of
    # every other signature (the same symbolic program at another size counts as another).
    # And the same on one more test of every signature, stage B's pick (`_second_tests`): a
    # loop switched on by data only some tests have (max |q| > 4) is not safe on the first.
    firsts = []
    for k, (size, sid) in enumerate(sized[:MORE_RUNS + 1]):
        run = {"id": "", "program": program_of.get(sid, sid), "test": tests_of[sid],
               "req": salt, "count": size, "sliced": [], "dim": dim, "inject": 0,
               "watch": [a.name for a in inputs], "own": True,
               "groups": [{"path": a.name, "axis": a.shape.index(dim), "size": 1}
                          for a in inputs], "primary": False}
        if k or every:  # the reference's: also the first (its picks' figure)
            specs.append({**run, "id": f"r{n + len(specs)}"})
        firsts.append({**run, "signature": sid})
    for extra in [] if every else _second_tests(firsts, names_of, salt):
        specs.append({**extra, "id": f"r{n + len(specs)}"})
    return specs


# Runs at other signatures than the largest, per dimension: every one the problems have today.
MORE_RUNS = 16


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
                 program: str, trajectories: dict[str, TrajectoryLoop] | None = None,
                 tolerance: tuple[float, float] = (0.0, 0.0)) -> tuple[Observation, ...]:
    """Stage B's validated observations of `program`, as the rules read them. Every planned
    run of it is one: a run stage B did not report fails its requirement (closed).
    trajectories: the reference's answers step by step per figure key (reference_work), read
    with the problem's `tolerance` (rtol, atol)."""
    if not specs:
        return ()
    result = result or {}
    position = {spec["id"]: k for k, spec in enumerate(specs)}
    out = []
    for spec in specs:
        got = result.get(spec["id"])
        if spec.get("candidates"):  # stage B picked one: it must be one we offered
            offered = {(c["program"], c["test"]): c for c in spec["candidates"]}
            pick = offered.get((got.picked_program, got.picked_test)) if got else None
            if pick is None:
                if spec["candidates"][0]["program"] != program:
                    continue
                got = got and ObservedResult(status="error", reason="a pick that was not offered")
                pick = spec["candidates"][0]
            spec = {**spec, **pick}
        if spec["program"] != program:
            continue
        if got is None and position.get(spec["id"], 0) >= MAX_RUNS:  # fails closed, saying why
            got = ObservedResult(status="unobservable", reason=(
                f"the problem asks for {len(specs)} observed runs of a grade, more than the "
                f"{MAX_RUNS} the judge runs: its package must ask for fewer"))
        if got is None:  # planned and never reported: no evidence, no pass
            got = ObservedResult(status="error", reason="the observer reported no run")
        primary = spec.get("primary", True)
        if got.status == "error":  # the observer broke: our bug, the requirement fails
            log.warning("stage B's observer failed on %s: %s", spec["id"], got.reason)
        if got.status == "over_budget":
            got = got.model_copy(update={"reason": over_budget(spec, got.work)})
        loops = tuple(
            LoopRun(index=r.index, depth=r.depth, steps=r.steps, entry=tuple(r.entry),
                    entry_max=tuple(r.entry_max), exit=tuple(r.exit), work=tuple(r.work),
                    exit_parts=tuple(tuple(p) for p in r.exit_parts), needed=tuple(r.needed),
                    alone=tuple(r.alone),
                    reached=tuple(r.reached),
                    enters=tuple(r.enters), for_good=tuple(r.for_good),
                    slots=tuple(Slot(first=tuple(sl.first), touches=tuple(sl.touches),
                                     kept=tuple(sl.kept), live=sl.live,
                                     single=tuple(sl.single), part=sl.part)
                                for sl in r.slots))
            for r in got.loops
        )
        if spec.get("kind") == "trajectory":
            stored = (trajectories or {}).get(spec.get("ref_key", ""))
            out.append(Observation(
                count=spec["count"], sliced=(), test=spec["test"], status=got.status,
                reason=got.reason, kind="trajectory", primary=True,
                reference=None if stored is None else _trajectory(stored),
                tolerance=tolerance, unfinished=got.trajectory_unfinished,
                response=bool(spec.get("kick_at")), restart=bool(spec.get("restart")),
                trajectory=tuple(_trajectory(t) for t in got.trajectory)))
            continue
        out.append(Observation(count=spec["count"], sliced=tuple(spec["sliced"]),
                               dim=spec.get("dim", ""),
                               watched=",".join(spec.get("watch", [])) if spec.get("dim") else "",
                               private=tuple(got.private),
                               private_looped=tuple(got.private_looped),
                               chunks=got.chunks,
                               test=spec["test"], status=got.status, reason=got.reason,
                               groups=got.groups, group_elements=got.group_elements,
                               outputs=tuple(got.outputs),
                               loops=loops, kind=spec.get("kind", "loop"),
                               primary=primary, second=bool(spec.get("second")),
                               activations=tuple(tuple(a) for a in got.activations),
                               activation_sizes=tuple(tuple(a)
                                                      for a in got.activation_sizes),
                               activation_spread=tuple(tuple(a)
                                                       for a in got.activation_spread)))
    return tuple(out)
