"""What stage B saw a custom_vjp's rules compute when it ran them on their own (the data the
rule `custom_vjp_rules_run` decides from; built by jaxjudge.grading.rules_run on the trusted
side from stage B's outputs)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RuleMismatch:
    """One part of the rules whose values differ from what solve returned on one test."""

    part: str  # "function", "forward" (the forward rule's output) or "backward"
    test: str
    differing: int  # elements that differ beyond the problem's tolerance
    total: int
    index: tuple[int, ...] = ()  # the first differing element
    rule_value: float = 0.0
    solve_value: float = 0.0
    input_value: float | None = None  # the rules' argument at that element, when it has one
    visible: bool = True  # a visible test: index and values may be named


@dataclass(frozen=True)
class RulesRun:
    """The rules run on the tests: `reason` says why they could not be (empty when they ran);
    `tests` is how many tests both the rules and solve ran; `errors` the tests on which the
    rules raised (test, error); `mismatches` where their values differ from solve's."""

    reason: str = ""
    tests: int = 0
    errors: tuple[tuple[str, str], ...] = ()
    mismatches: tuple[RuleMismatch, ...] = field(default_factory=tuple)
