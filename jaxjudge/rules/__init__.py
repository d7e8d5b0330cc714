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

# Importing the rule modules registers their rules.
from jaxjudge.rules import absence as _absence  # noqa: F401
from jaxjudge.rules import custom_vjp_run as _custom_vjp_run  # noqa: F401
from jaxjudge.rules import forbidden as _forbidden  # noqa: F401
from jaxjudge.rules import growth as _growth  # noqa: F401
from jaxjudge.rules import jaxpr as _jaxpr  # noqa: F401
from jaxjudge.rules import low_precision_dots as _low_precision_dots  # noqa: F401
from jaxjudge.rules import products as _products  # noqa: F401
from jaxjudge.rules import program as _program  # noqa: F401
from jaxjudge.rules import programs_per_bucket as _programs_per_bucket  # noqa: F401
from jaxjudge.rules import scaled_backward as _scaled_backward  # noqa: F401
from jaxjudge.rules import size as _size  # noqa: F401
from jaxjudge.rules import structure as _structure  # noqa: F401
from jaxjudge.rules import summary as _summary  # noqa: F401
from jaxjudge.rules import traced as _traced  # noqa: F401
from jaxjudge.rules.jaxpr import check_checkpoint_region
from jaxjudge.rules.outcome import RuleOutcome
from jaxjudge.rules.program import check_rematerialized_activation
from jaxjudge.rules.registry import RULES, Rule, RuleConfigError, RuleOptions

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
    "Rule",
    "RuleConfigError",
    "RuleOptions",
    "RuleOutcome",
    "check_checkpoint_region",
    "check_rematerialized_activation",
]
