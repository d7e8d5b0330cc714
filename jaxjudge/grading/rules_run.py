"""The custom_vjp rules run on their own (rule custom_vjp_rules_run): what stage A is asked to
export, the program stage B runs on the tests, and the comparison of its values with solve's,
made here on the trusted side from stage B's schema-checked outputs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from jaxjudge.grading.stage_results import StageAResult, StageBResult
from jaxjudge.problems.package import Problem, Requirement
from jaxjudge.rules.custom_vjp_run import NAME as RULE
from jaxjudge.rules.executed_rules import RuleMismatch, RulesRun

if TYPE_CHECKING:
    from jaxjudge.grading.plan import Plan

RULES_ID = "rules"  # the rules program's id (rules.jaxexport, rules.mlir)
PARTS = ("function", "forward", "backward")
MAX_MESSAGE = 2000


def _requirement(problem: Problem) -> Requirement | None:
    return next((r for r in problem.requirements if r.rule == RULE), None)


def rules_request(problem: Problem, plan: Plan) -> dict[str, int] | None:
    """Stage A's `rules_run` job entry: solve's positional arguments the rules get."""
    req = _requirement(problem)
    if req is None:
        return None
    opts = req.options
    return {"argument": plan.arg_names.index(opts["argument"]),
            "cotangent": plan.arg_names.index(opts["cotangent"])}


def rules_program(problem: Problem, stage_a: StageAResult,
                  plan: Plan) -> dict[str, Any] | None:
    """The rules program for stage B's job, when stage A exported it at the symbolic signature
    or at a test signature: run on the tests of `runs_on` (on no signature of its own), each
    part compared with the solve output `compare` names, at that output's tolerance."""
    req = _requirement(problem)
    exports = stage_a.exports or {}
    if req is None or exports.get(RULES_ID) != f"{RULES_ID}.jaxexport":
        return None
    opts = req.options
    primal = [opts["primal_output"], *problem.tolerance.for_output(opts["primal_output"])]
    grad = [opts["gradient_output"], *problem.tolerance.for_output(opts["gradient_output"])]
    compare = {"function": primal, "forward": primal, "backward": grad}
    sid = stage_a.rules_signature
    if sid == "poly" and plan.symbolic:
        return {"id": RULES_ID, "args": plan.symbolic["args"], "signatures": [],
                "runs_on": [s["id"] for s in plan.signatures.values()], "compare": compare,
                "allowed_custom_calls": ["shape_assertion"]}
    sig = next((s for s in plan.signatures.values() if s["id"] == sid), None)
    if sig is None:
        return None
    return {"id": RULES_ID, "args": sig["args"], "signatures": [], "runs_on": [sid],
            "compare": compare}


def _given(value: Any, index: list[int]) -> float | None:
    """A visible test's argument at a differing element, to name it in the message."""
    try:
        return float(np.asarray(value, dtype=np.float64)[tuple(index)])
    except (TypeError, ValueError, IndexError):
        return None


def rules_run(problem: Problem, plan: Plan, stage_a: StageAResult,
              result: StageBResult) -> RulesRun | None:
    """What stage B saw the rules compute on the tests against what solve returned, or None
    when the problem asks for no rules run. A hidden test's values are never named."""
    req = _requirement(problem)
    if req is None:
        return None
    argument = req.options["argument"]
    if RULES_ID not in (stage_a.exports or {}):
        return RulesRun(reason=(stage_a.rules_error or "they could not be exported")[
            :MAX_MESSAGE])
    ran = result.rule_outputs or {}
    tests = 0
    failed: list[tuple[str, str]] = []
    found: list[RuleMismatch] = []
    for case in plan.cases:
        mine = ran.get(case.name)
        if mine is None:
            continue
        if not mine.ok:
            failed.append((case.name, mine.error[-MAX_MESSAGE:] if case.visible else
                           "an error on a hidden test"))
            continue
        tests += 1
        for part in PARTS:
            d = mine.parts.get(part)  # type: ignore[call-overload]
            if d is None:
                continue
            shown = case.visible and d.rule is not None and d.solve is not None
            found.append(RuleMismatch(
                part, case.name, d.differing, d.total,
                tuple(d.index) if shown else (),
                d.rule if shown and d.rule is not None else 0.0,
                d.solve if shown and d.solve is not None else 0.0,
                _given(case.inputs.get(argument), d.index) if shown else None, shown))
    found.sort(key=lambda m: not m.visible)  # a visible test's values can be shown
    return RulesRun(tests=tests, errors=tuple(failed), mismatches=tuple(found))
