"""What a rule reads (one exported program) and what it returns (passed, and why)."""

from __future__ import annotations

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
