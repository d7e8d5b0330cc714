"""The custom_vjp rules run on their own (rule custom_vjp_rules_run): what stage A is asked to
export, the program stage B runs on the tests, and the comparison of its values with solve's,
made here on the trusted side from stage B's schema-checked outputs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from jaxjudge.analysis.executed_rules import RuleMismatch, RulesRun
from jaxjudge.grading.stage_results import RULE_PARTS, StageAResult, StageBResult
from jaxjudge.problems.package import Problem, Requirement
from jaxjudge.rules.custom_vjp_run import NAME as RULE

if TYPE_CHECKING:
    from jaxjudge.grading.plan import Plan

RULES_ID = "rules"  # the rules program's id (rules.jaxexport, rules.mlir)
# each part at x's shape, then at each other shape the function was called at (stage_results)
PARTS = RULE_PARTS
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


def rules_programs(problem: Problem, stage_a: StageAResult,
                   plan: Plan) -> list[dict[str, Any]]:
    """The rules programs for stage B's job: the one stage A exported at the symbolic
    signature, run on every test, or one per test signature, each run on that signature's
    tests (on no signature of its own); each part compared with the solve output `compare`
    names, at that output's tolerance. Empty when the rules were not exported at every
    signature the tests have."""
    req = _requirement(problem)
    exports = stage_a.exports or {}
    if req is None:
        return []
    opts = req.options
    primal = [opts["primal_output"], *problem.tolerance.for_output(opts["primal_output"])]
    grad = [opts["gradient_output"], *problem.tolerance.for_output(opts["gradient_output"])]
    compare = {part: grad if part.startswith("backward") else primal for part in PARTS}
    if (stage_a.rules_signature == "poly" and plan.symbolic
            and exports.get(RULES_ID) == f"{RULES_ID}.jaxexport"):
        return [{"id": RULES_ID, "args": plan.symbolic["args"], "signatures": [],
                 "runs_on": [s["id"] for s in plan.signatures.values()], "compare": compare,
                 "allowed_custom_calls": ["shape_assertion"]}]
    out = []
    for sig in plan.signatures.values():
        pid = rules_id(sig["id"])
        if sig["id"] not in stage_a.rules_signatures or exports.get(pid) != f"{pid}.jaxexport":
            return []
        out.append({"id": pid, "args": sig["args"], "signatures": [], "runs_on": [sig["id"]],
                    "compare": compare})
    return out


def rules_id(signature: str) -> str:
    """The id (and file stem) of the rules program exported at one test signature."""
    return f"{RULES_ID}-{signature}"


def is_rules(program_id: str) -> bool:
    return program_id == RULES_ID or program_id.startswith(f"{RULES_ID}-")


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
    if not any(is_rules(pid) for pid in stage_a.exports or {}):
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
