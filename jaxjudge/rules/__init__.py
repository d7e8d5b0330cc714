"""Structural rules: checks on *how* a submission computes, not just what it returns.

Both levels run in the trusted parent on data that came out of a sandbox, so every rule treats
its input as hostile: sizes and depths are capped, types are checked, and a rule never raises on
malformed input; it returns a failed `RuleOutcome` whose message says what was found.

- spec level (`SPEC_RULES`): the jaxpr summary stage A wrote; `rule(summary, **options)`.
- program level (`PROGRAM_RULES`): the exported StableHLO per input-shape signature;
  `rule(programs, **options)`. This level is authoritative: it sees what actually runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RuleOutcome:
    passed: bool
    message: str  # actionable, learner-facing: what was found and what to do


@dataclass(frozen=True)
class ProgramInfo:
    """One exported program, as stage B wrote it."""

    signature: str  # e.g. "B=2,D=3,H=4"
    text: str  # the module in MLIR generic op form, without debug info
    args: list[str]  # main's argument i -> input path, e.g. ["params.b1", ..., "x", "y"]
    outs: list[str]  # main's result i -> output path, e.g. ["grads.b1", ..., "loss"]
    # The named dimensions' values this program was exported for ({} when it is symbolic in
    # them), and the dimensions it is symbolic in (one program serves every value).
    dims: dict[str, int] = field(default_factory=dict)
    symbolic: tuple[str, ...] = ()


# The rule modules import the two dataclasses above, so they are imported after them; importing
# them registers their rules.
from jaxjudge.rules import jaxpr as _jaxpr  # noqa: E402,F401
from jaxjudge.rules import program as _program  # noqa: E402,F401
from jaxjudge.rules import structure as _structure  # noqa: E402,F401
from jaxjudge.rules import summary as _summary  # noqa: E402,F401
from jaxjudge.rules.jaxpr import check_checkpoint_region  # noqa: E402
from jaxjudge.rules.program import check_rematerialized_activation  # noqa: E402
from jaxjudge.rules.registry import RULES, Rule, RuleConfigError, RuleOptions  # noqa: E402

SPEC_RULES: dict[str, Callable[..., RuleOutcome]] = {
    name: rule.check for name, rule in RULES.items() if rule.level == "spec"
}
PROGRAM_RULES: dict[str, Callable[..., RuleOutcome]] = {
    name: rule.check for name, rule in RULES.items() if rule.level == "program"
}

__all__ = [
    "PROGRAM_RULES",
    "RULES",
    "SPEC_RULES",
    "ProgramInfo",
    "Rule",
    "RuleConfigError",
    "RuleOptions",
    "RuleOutcome",
    "check_checkpoint_region",
    "check_rematerialized_activation",
]
