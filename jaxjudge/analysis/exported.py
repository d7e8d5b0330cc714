"""What stage B exported, as the analyses read it: one program (`ProgramInfo`) and the few ops of
it a rule decided on (`Region`, printed under the requirement in the report)."""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxjudge.analysis.executed_rules import RulesRun
from jaxjudge.analysis.observed import Observation
from jaxjudge.analysis.stablehlo import Op


@dataclass(frozen=True)
class Region:
    """The few ops of one verified program a rule decided on (the value too large, the dot,
    the loop, the activation read again), in program order: the report prints them under the
    requirement (jaxjudge.grading.evidence). Built by `jaxjudge.analysis.region.region_of`."""

    signature: str  # the program's input shapes, e.g. "B=2,D=3,H=4"
    ops: tuple[Op, ...]
    focus: frozenset[int] = frozenset()  # indices into ops decided on (the others: context)
    args: dict[str, str] = field(default_factory=dict)  # "%arg0" -> "params.w1" (main only)
    note: str = ""  # a remark printed above the ops ("B=2: 41 ops; B=8: 83 ops")
    lines: tuple[int, ...] = ()  # the submission's lines the focus ops came from, if known


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
    # Exported at one of the judge's probe shapes (jaxjudge.rules.growth), and run on tests (a
    # probe shape no test has is exported for the growth check alone: tested is False).
    probe: bool = False
    tested: bool = True
    # Op index (`Op.index`) -> (op name, line of the submission) for the ops whose recorded
    # location names the submission file, checked by jaxjudge.grading.srclines: a pointer the
    # submission chose, shown beside an op the trusted side picked, never evidence itself.
    located: dict[int, tuple[str, int]] = field(default_factory=dict)
    # What stage B saw this program do when it ran one test, per loop requirement
    # (jaxjudge.analysis.observed): evidence beside the text's proof, never instead of it.
    observed: tuple[Observation, ...] = ()
    # The custom_vjp's rules run on their own on the tests, beside this (tested) program
    # (jaxjudge.rules.custom_vjp_run), when a requirement asks for it.
    rules_run: RulesRun | None = None
