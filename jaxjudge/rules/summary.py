"""Spec-level rules on stage A's jaxpr summary beyond checkpoints: which primitives are used.

The summary comes from the untrusted stage, so these rules explain; they score only when the
program-level requirements named in `corroborated_by` pass (see
jaxjudge.problems.package.Requirement). A requirement with `corroborated_by = []` states a property
no exported program can show (which differentiation rule produced a gradient, say): it can fail a
submission but earns no points.
"""

from __future__ import annotations

from pydantic import Field

from jaxjudge.rules.jaxpr import MAX_REASON_CHARS, _Malformed, _Table
from jaxjudge.rules.outcome import RuleOutcome
from jaxjudge.rules.registry import RuleOptions, register


class UsesPrimitiveOptions(RuleOptions):
    any_of: list[str] = Field(min_length=1, max_length=16,
                              description="primitive names, e.g. [custom_vjp_call, "
                                          "custom_vjp_call_jaxpr] (names differ across JAX)")
    what: str = Field(min_length=1, max_length=80, description="what a learner calls it")
    hint: str = Field(default="", max_length=400, description="how to fix a failure")


@register("uses_primitive", "spec", UsesPrimitiveOptions)
def check_uses_primitive(summary: object, *, any_of: list[str], what: str, hint: str = ""
                         ) -> RuleOutcome:
    """The traced program uses one of the given primitives (at any nesting depth).

    Custom-derivative functions called while tracing count too (the summary's `called` list):
    one that was only differentiated leaves no eqn in the jaxpr."""
    if summary is None:
        return RuleOutcome(False, f"Your function could not be traced, so the use of {what} "
                                  "could not be checked: fix the error reported first.")
    if isinstance(summary, dict) and "omitted" in summary:
        reason = summary.get("omitted")
        why = f" ({reason[:MAX_REASON_CHARS]})" if isinstance(reason, str) and reason else ""
        return RuleOutcome(False, f"The traced program is too large to summarize{why}, so the "
                                  f"use of {what} could not be checked.")
    try:
        table = _Table(summary)
        names = {e["primitive"] for j in table.reachable([table.root]) for e in table.eqns[j]}
        called = summary.get("called", [])
        if not isinstance(called, list) or len(called) > 16 or not all(
            isinstance(c, str) and len(c) <= 64 for c in called
        ):
            raise _Malformed("its list of called custom-derivative functions is malformed")
        names.update(called)
    except _Malformed as exc:
        return RuleOutcome(False, f"The trace summary could not be read ({exc}), so the use "
                                  f"of {what} could not be checked.")
    found = sorted(names & set(any_of))
    if found:
        return RuleOutcome(True, f"Your traced program uses {what} ({found[0]}).")
    return RuleOutcome(False, f"No {what} was found in your traced program. {hint}".strip())
