"""What a rule returns (passed, why, and where); what it reads is one exported program
(jaxjudge.analysis.exported.ProgramInfo)."""

from __future__ import annotations

from dataclasses import dataclass

from jaxjudge.analysis.exported import Region


@dataclass(frozen=True)
class RuleOutcome:
    passed: bool
    message: str  # actionable, learner-facing: what was found and what to do
    region: Region | None = None  # where in the program (program-level rules, when known)
