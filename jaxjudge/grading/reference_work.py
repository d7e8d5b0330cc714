"""What the problem's reference costs stage B's observer, run by run: each observed run's
budget is a multiple of it (issue 41: budgets from the reference, evidence that cannot be used
up).

Where the figures come from, and why there: the parent grades the problem's reference (trusted)
through the very stages a learner's program goes through, with every observed run a learner's
grade may hold (`observe_specs(every=True)`), and keeps the work each run took. They are the
observer's own counts on the reference's exported program, so they depend on the JAX release
that exports it and on the observer's code as much as on the problem: measured where the grade
runs, keyed by grader version, JAX release, problem fingerprint and mode, they always budget the
machinery that spends them, where figures written at authoring time would go stale with any of
these. A problem's first grade pays one reference grade; later grades read one small private
file from the parent's state directory (statefile: atomic writes, a torn or foreign file is a
miss, and two processes that measure at once write the same figures), and a `Grader` keeps them
in memory.

Which figure budgets which run: the key is the requirement, what the run changes (its kind,
groups, steps, variants, watched inputs) and its test's signature, never a program id or a test
name. A learner's one symbolic program and the reference's per-shape ones get the same figures,
and a run stage B picks (a second test of a signature, another program) is budgeted at the
figure of its test's signature: the same computation at the same shapes does the same work, up
to data-dependent loop counts that the multiple covers.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
from importlib import util
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.grading.stage_results import TrajectoryLoop
from jaxjudge.isolation import statefile
from jaxjudge.problems.package import Problem
from jaxjudge.rules import RULES
from jaxjudge.version import grader_version

log = logging.getLogger("grader")

# What makes two runs the same run for the budget (jaxjudge.grading.observing's entry fields).
KEY_FIELDS = ("req", "kind", "op", "count", "sliced", "dim", "groups", "inject", "watch", "own")
# stages/evaluator.py's MAX_WORK: what a run the reference has no figure for gets (the reference
# itself could not be watched there), and the most the reference's own runs are given.
UNPRICED = 60_000_000
# The least a run is given: about 500 ops at the evaluator's fixed cost per op. A tiny reference
# run (a few ops on a few elements) would otherwise leave an honest program, which may spell the
# same step in more ops, no room; a junk loop gains nothing from it (no run is skipped).
FLOOR = 1_000_000
MAX_FIGURES = 512
# The reference's answers step by step (a trajectory run's loop, observe_trajectory.py): per
# figure key its rows, carried values and kicked answers; all together bounded.
MAX_TRAJECTORY_ELEMENTS = 1_000_000
MAX_FILE_BYTES = 32 << 20  # their state file: ~25 bytes per element at most
MAX_RULE_FIGURE = 1 << 40  # a rule's figure (an element count): beyond, not a figure


class Reference(NamedTuple):
    """What the reference did on the observer's runs: its work per run (the budgets), and on
    each trajectory run its loop's answers after 0, 1, ..., n steps; and per requirement whose
    rule compares with the reference (`Rule.reference`), its figures per signature."""

    figures: dict[str, int]
    trajectories: dict[str, TrajectoryLoop]
    rules: dict[str, dict[str, int]]


def needs_reference(problem: Problem) -> bool:
    """Whether a program requirement's rule compares with the reference's own figures."""
    return any(r.level == "program" and r.rule in RULES and RULES[r.rule].reference is not None
               for r in problem.requirements)


def rule_figures(problem: Problem, programs: list[ProgramInfo]) -> dict[str, dict[str, int]]:
    """Per requirement whose rule compares with the reference, its figures measured on the
    reference's tested programs (none where the measure failed: the learner's requirement
    then fails closed, saying so)."""
    tested = [p for p in programs if p.tested]
    out: dict[str, dict[str, int]] = {}
    for req in problem.requirements:
        rule = RULES.get(req.rule) if req.level == "program" else None
        if rule is None or rule.reference is None:
            continue
        try:
            found = rule.reference(tested, **req.options)
        except Exception:  # our analysis on our own reference: the requirement fails closed
            log.exception("measuring the reference of %s for %s", problem.id, req.name)
            continue
        out[req.name] = {str(k): int(v) for k, v in found.items()
                         if isinstance(v, int) and 0 <= v <= MAX_RULE_FIGURE}
    return out


def entry_key(entry: dict[str, Any], signature: str) -> str:
    """The figure key of an observe entry run on a test of `signature`."""
    fields = {k: entry.get(k) for k in KEY_FIELDS}
    if entry.get("kind") == "trajectory":  # the reference's answers are those of its test
        fields["test"] = entry.get("test")
    raw = json.dumps([signature, fields], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(raw.encode()).hexdigest()[:24]


def figures_from(specs: list[dict[str, Any]], observed: dict[str, Any] | None,
                 sig_of: dict[str, str]) -> dict[str, int]:
    """The reference's work per figure key, from its grade's entries and stage B's results
    (runs it could not finish give no figure: their learner runs get the ceiling)."""
    out: dict[str, int] = {}
    for spec in specs:
        got = (observed or {}).get(spec["id"])
        sig = sig_of.get(spec["test"])
        if got is None or sig is None or got.status != "ok" or got.work <= 0:
            continue
        key = entry_key(spec, sig)
        out[key] = max(out.get(key, 0), int(got.work))
    return out


def trajectories_from(specs: list[dict[str, Any]], observed: dict[str, Any] | None,
                      sig_of: dict[str, str]) -> dict[str, TrajectoryLoop]:
    """The reference's answers step by step per figure key, from its trajectory runs: its
    first loop of the run's trip count (the reference has one)."""
    out: dict[str, TrajectoryLoop] = {}
    for spec in specs:
        got = (observed or {}).get(spec["id"])
        sig = sig_of.get(spec["test"])
        if spec.get("kind") != "trajectory" or got is None or sig is None or got.status != "ok":
            continue
        loop = next((t for t in got.trajectory if t.steps == spec["count"]), None)
        if loop is not None:
            out[entry_key(spec, sig)] = loop
    return out


def _elements(loop: TrajectoryLoop) -> int:
    return (sum(len(r) for r in loop.rows) + sum(len(s.values) for s in loop.states)
            + sum(len(k.row) for k in loop.kicks) + sum(len(r.row) for r in loop.restarts)
            + sum(len(r.row) for r in loop.readouts))


def budget(figure: int | None, multiple: float) -> int:
    """A run's budget: `multiple` times the reference's figure, within [FLOOR, TOTAL] (no run
    is given more than the whole grade's runs together, the trusted side's time bound)."""
    if figure is None:
        return UNPRICED
    return max(FLOOR, min(TOTAL, math.ceil(multiple * figure)))


def with_budgets(specs: list[dict[str, Any]], figures: dict[str, int], multiple: float,
                 sig_of: dict[str, str]) -> list[dict[str, Any]]:
    """The entries, each (and each candidate of a pick) with its own `max_work` and the
    reference's figure it came from (`ref_work`, None: none; read back for the message)."""
    def priced(entry: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
        sig = sig_of.get(entry["test"], "")
        key = entry_key(base, sig)
        figure = figures.get(key)
        return {**entry, "max_work": budget(figure, multiple), "ref_work": figure,
                "multiple": multiple, "ref_key": key}

    out = []
    for spec in specs:
        spec = priced(spec, spec)
        if spec.get("candidates"):
            spec["candidates"] = [priced(c, spec) for c in spec["candidates"]]
        out.append(spec)
    return out


# stages/observe.py's TOTAL_WORK: all of one grade's runs together
TOTAL = 12 * UNPRICED


def over_budget(spec: dict[str, Any], given: int) -> str:
    """Why a run that ran out of its budget fails, with the reference's figure; `given`: the
    budget stage B ran it on (below its own when the grade's runs had spent their total)."""
    allowed, figure = spec.get("max_work"), spec.get("ref_work")
    if isinstance(allowed, int) and given < allowed:
        return (f"your program's observed runs together did more than {TOTAL:,} element "
                f"operations, the most the grader gives one grade (the runs before this one "
                f"took the rest)")
    if isinstance(allowed, int) and isinstance(figure, int) and figure > 0:
        times, multiple = allowed / figure, spec.get("multiple", allowed / figure)
        capped = (f", and at most {TOTAL:,} for all of a grade's runs" if allowed >= TOTAL
                  else "")
        return (f"it did more than {times:.0f}x the observed work of the reference on the "
                f"same run ({allowed:,} element operations against {figure:,}; the judge "
                f"allows {multiple:g}x{capped})")
    return (f"it did more than {allowed if isinstance(allowed, int) else UNPRICED:,} element "
            f"operations, the most the grader gives an observed run the reference has no "
            f"figure for")


def state_key(problem_id: str, fingerprint: str, mode: str, kick_seed: int = 0) -> str:
    """What the reference's figures depend on besides the observer's inputs (its kicked
    answers on the installation's kick seed: never kept under another seed's key)."""
    parts = ("observed-work", grader_version(), _jax_stamp(), problem_id, fingerprint, mode,
             str(kick_seed))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


@functools.cache
def _jax_stamp() -> str:
    """The JAX release stage A exports with (its version file's bytes, found without importing
    jax or scanning the installed distributions, which took 0.1 s)."""
    try:
        spec = util.find_spec("jax")
        origin = Path(spec.origin) if spec is not None and spec.origin else None
        raw = (origin.parent / "version.py").read_bytes() if origin is not None else b""
    except (ImportError, OSError, ValueError):
        raw = b""
    return hashlib.sha256(raw).hexdigest()[:16]


def _path(key: str) -> Path:
    return statefile.state_dir() / "reference-work" / f"{key}.json"


def load(key: str) -> Reference | None:
    """What an earlier process kept for `key`; None when absent, torn or malformed."""
    data = statefile.read(_path(key), MAX_FILE_BYTES)
    figures = data.get("figures") if isinstance(data, dict) else None
    if not isinstance(figures, dict) or len(figures) > MAX_FIGURES:
        return None
    if not all(isinstance(k, str) and type(v) is int and 0 < v <= UNPRICED
               for k, v in figures.items()):
        return None
    runs = data.get("trajectories", {})
    if not isinstance(runs, dict) or len(runs) > MAX_FIGURES:
        return None
    try:
        loops = {k: TrajectoryLoop.model_validate(v) for k, v in runs.items()
                 if isinstance(k, str)}
    except ValidationError:
        return None
    if len(loops) != len(runs) or sum(map(_elements, loops.values())) > MAX_TRAJECTORY_ELEMENTS:
        return None
    rules = data.get("rules", {})
    if not isinstance(rules, dict) or len(rules) > MAX_FIGURES or not all(
            isinstance(name, str) and isinstance(per, dict) and len(per) <= MAX_FIGURES
            and all(isinstance(k, str) and type(v) is int and 0 <= v <= MAX_RULE_FIGURE
                    for k, v in per.items())
            for name, per in rules.items()):
        return None
    return Reference(dict(figures), loops, {k: dict(v) for k, v in rules.items()})


def store(key: str, reference: Reference) -> None:
    """Keep the figures for later processes (best effort, atomic)."""
    statefile.write(_path(key), {"figures": reference.figures,
                                 "trajectories": {k: v.model_dump()
                                                  for k, v in reference.trajectories.items()},
                                 "rules": reference.rules})
