"""The rule vocabulary: every structural rule registered by name, with typed options.

A problem's `problem.toml` names rules and gives their options; `jaxjudge.problems.package`
validates both against this registry when the package loads, so an unknown rule, a rule used at the
wrong level or a bad option is the problem author's error, reported with the requirement it is in,
and never a learner's `internal_error`. Each rule module registers its rules with `@register`.

- spec level: `check(summary, **options)` on stage A's jaxpr summary (untrusted: explains);
- program level: `check(programs, **options)` on the verified exported programs (decides).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

Level = Literal["spec", "program"]
F = TypeVar("F", bound=Callable[..., Any])


class RuleOptions(BaseModel):
    """Base of every rule's options: unknown keys are errors (a typo must not pass silently)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class Rule:
    name: str
    level: Level
    options: type[RuleOptions]
    check: Callable[..., Any]
    summary: str  # one line: what the rule proves (documentation, `jaxjudge rules`)
    # The rule reads element counts or loop bounds, which only static shapes carry: a problem
    # using it is exported once per input shape instead of once with symbolic dimensions.
    static_shapes: bool = False
    # The rule's own failure for a submission that cannot be traced because it needs a traced
    # value in Python (`if x > 0`, int(x)): `untraceable(message, entry_point=..., **options)`
    # (entry_point: the problem's function, to tell its arguments from a jitted helper's)
    # returns a failed outcome when the requirement is about that (a traced step counter), else
    # None.
    untraceable: Callable[..., Any] | None = None
    # The option naming the dimension (e.g. "dim"), or the list of them ("dims"), whose growth
    # the rule measures: whenever a grade exports per shape, it also exports the submission at
    # the judge's probe shapes of each (jaxjudge.rules.growth.probe_dims), and the rule gets
    # those programs beside the tests'. An option left empty (None) names none.
    probe: str | None = None
    # Options naming arguments that must be arrays of one declared shape: the rule lays them
    # out side by side, element by element (the custom_vjp rules run at other shapes).
    same_shape: tuple[str, ...] = ()
    # Figures the rule compares with the problem's reference: `reference(programs, **options)`
    # measures them on the reference's own verified programs ({signature: figure}), graded
    # through the same stages (jaxjudge.grading.reference_work); the rule then gets them as
    # `check(programs, reference=..., **options)`.
    reference: Callable[..., dict[str, int]] | None = None


RULES: dict[str, Rule] = {}


def register(
    name: str, level: Level, options: type[RuleOptions], *, static_shapes: bool = False,
    untraceable: Callable[..., Any] | None = None, probe: str | None = None,
    same_shape: tuple[str, ...] = (), reference: Callable[..., dict[str, int]] | None = None,
) -> Callable[[F], F]:
    """Register `check` under `name`; its docstring's first line is the rule's summary."""

    def wrap(check: F) -> F:
        if name in RULES:
            raise ValueError(f"rule {name!r} registered twice")
        doc = (check.__doc__ or "").strip().splitlines()
        RULES[name] = Rule(name, level, options, check, doc[0] if doc else "", static_shapes,
                           untraceable, probe, same_shape, reference)
        return check

    return wrap


class RuleConfigError(ValueError):
    """A requirement names an unknown rule, the wrong level, or bad options."""


def validate(rule: str, level: str, raw: dict[str, Any]) -> RuleOptions:
    """The typed options of one requirement, or RuleConfigError saying which key is wrong."""
    found = RULES.get(rule)
    if found is None:
        known = ", ".join(sorted(RULES))
        raise RuleConfigError(f"unknown rule {rule!r} (known rules: {known})")
    if found.level != level:
        reads = "exported program" if found.level == "program" else "jaxpr summary"
        raise RuleConfigError(
            f"rule {rule!r} reads the {reads}: use level = {found.level!r}, not {level!r}"
        )
    try:
        return found.options.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(options)'}: {e['msg']}" for e in exc.errors()
        )
        raise RuleConfigError(f"bad options for rule {rule!r}: {problems}") from None
