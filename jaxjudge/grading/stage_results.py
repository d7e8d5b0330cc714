"""Schemas of the result files the sandboxed stages write (result.json), checked before use.

Stage A's result is written next to user code, which can overwrite it with anything: wrong
types, lists where dicts belong, 10**300 or Infinity where seconds belong, megabytes of text.
Stage B is trusted code, but it just read bytes stage A produced, so its result is checked the
same way. Every field is validated here, in strict mode (no coercion: `true` is not a number,
"1" is not a float), with bounds on every size, before grade.py reads a single value; a result
that does not fit raises `MalformedResult` and becomes a verdict, never an `internal_error`.

Unknown keys are ignored (never read). The jaxpr summary stays an opaque JSON value here,
bounded in depth and node count (the spec rule checks its shape); a test's output value is
decoded and bounded by `jaxjudge.grading.compare.decode_output`.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from jaxjudge.analysis.trajectory import MAX_FOLLOWED

MAX_MESSAGE_CHARS = 16_000  # stage A trims its messages to 4,000, stage B its errors to 2,000
MAX_NAME_CHARS = 128
MAX_TIMINGS = 32
MAX_SECONDS = 1e6
MAX_EXPORTS = 1024  # one per distinct input signature, at most
MAX_TESTS = 100_000
MAX_PROGRAM_ARGS = 100_000
MAX_ENGINES = 8
# The jaxpr summary nests 4 JSON levels per nested jaxpr (summary, eqns, eqn, jaxprs); Python's
# json module stops near 1,000 levels anyway. Nodes: the spec rule reads at most 200,000 eqns.
MAX_JSON_DEPTH = 1000
MAX_JSON_NODES = 4_000_000


class MalformedResult(ValueError):
    """A stage's result file is not valid JSON of the documented shape; the message says where
    (for logs: learners get a fixed message)."""


class ResultTooDeep(MalformedResult):
    """The result nests deeper than can be read. An honest cause exists: a program that nests
    jit (or other function) calls hundreds deep has a jaxpr summary that deep."""


class _Deep(ValueError):
    """Raised inside validation; pydantic reports it, `_validate` turns it into ResultTooDeep."""

    def __init__(self) -> None:
        super().__init__(f"nested deeper than {MAX_JSON_DEPTH} levels")


def _json_value(value: Any) -> Any:
    """Accept plain JSON (dicts with str keys, lists, str, int, float, bool, None) up to
    MAX_JSON_DEPTH levels and MAX_JSON_NODES nodes; checked with an explicit stack."""
    nodes = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > MAX_JSON_NODES:
            raise ValueError(f"more than {MAX_JSON_NODES} JSON nodes")
        if isinstance(node, dict):
            if depth >= MAX_JSON_DEPTH and node:
                raise _Deep()
            for k, v in node.items():
                if not isinstance(k, str):
                    raise ValueError("a JSON object key is not a string")
                stack.append((v, depth + 1))
        elif isinstance(node, list):
            if depth >= MAX_JSON_DEPTH and node:
                raise _Deep()
            stack.extend((v, depth + 1) for v in node)
        elif node is not None and not isinstance(node, (str, int, float)):
            raise ValueError(f"not a JSON value: {type(node).__name__}")
    return value


Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)]
Message = Annotated[str, Field(max_length=MAX_MESSAGE_CHARS)]
Seconds = Annotated[float, Field(ge=0.0, le=MAX_SECONDS, allow_inf_nan=False)]
Timings = Annotated[dict[Name, Seconds], Field(max_length=MAX_TIMINGS)]
JsonValue = Annotated[Any, AfterValidator(_json_value)]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


MAX_TRACED_ARGUMENTS = 16


class TracedCause(_Strict):
    """Whether `solve`, which failed to trace or export, did so with one argument made
    concrete (`concrete_ok`; absent: the retry could not say, e.g. it ran out of time)."""

    argument: Name
    concrete_ok: bool | None = None
    error_type: Name | None = None


class StageAResult(_Strict):
    """jaxjudge/stages/trace.py's result.json."""

    status: Literal["ok", "compile_error", "runtime_error", "trace_error", "export_error"]
    message: Message = ""
    timings: Timings = Field(default_factory=dict)
    jax_version: Name | None = None
    error_type: Name | None = None  # trace_error / export_error: the exception's class name
    signature: Name | None = None  # export_error: the signature that failed
    exports: Annotated[dict[Name, Name], Field(max_length=MAX_EXPORTS)] | None = None
    # the custom_vjp's rules exported on their own: "poly" (exports["rules"], every shape),
    # else one per test signature (exports["rules-<id>"], rules_signatures), or why not
    rules_signature: Name | None = None
    rules_signatures: Annotated[list[Name], Field(max_length=MAX_EXPORTS)] = Field(
        default_factory=list)
    rules_error: Message = ""
    # The summaries (opaque here: jaxjudge.rules.jaxpr checks their shape). The shape-
    # polymorphic path: `jaxpr`, its one program's. The per-signature path: the distinct
    # summaries (`jaxprs`, one JSON list: one node budget) and, per test signature, the index of
    # its own program's (`jaxpr_at`).
    jaxpr: JsonValue = None
    jaxprs: JsonValue = None
    jaxpr_at: Annotated[dict[Name, Annotated[int, Field(ge=0, lt=MAX_EXPORTS)]],
                        Field(max_length=MAX_EXPORTS)] = Field(default_factory=dict)
    # trace_error / export_error: the same trace and export again with each traced argument
    # a requirement names made concrete (jaxjudge/stages/trace.py `_concrete_retry`)
    traced_cause: Annotated[list[TracedCause], Field(max_length=MAX_TRACED_ARGUMENTS)] = Field(
        default_factory=list)

    @model_validator(mode="after")
    def _ok_has_exports(self) -> StageAResult:
        if self.status == "ok" and not self.exports:
            raise ValueError("status ok without exports")
        if self.jaxprs is not None and (not isinstance(self.jaxprs, list)
                                        or len(self.jaxprs) > MAX_EXPORTS):
            raise ValueError(f"jaxprs is not a list of at most {MAX_EXPORTS} summaries")
        if any(k >= len(self.jaxprs or ()) for k in self.jaxpr_at.values()):
            raise ValueError("jaxpr_at refers to a summary that is not in jaxprs")
        return self

    def summaries(self) -> list[tuple[list[str], Any]]:
        """Each distinct summary with the test signatures whose program it is (in order of
        first appearance); the shape-polymorphic path's one summary serves every signature
        ([])."""
        if not self.jaxpr_at:
            return [([], self.jaxpr)]
        sigs: dict[int, list[str]] = {}
        for sig, k in self.jaxpr_at.items():
            sigs.setdefault(k, []).append(sig)
        return [(ids, self.jaxprs[k]) for k, ids in sigs.items()]  # type: ignore[index]


class ProgramEntry(_Strict):
    text_file: Name
    profiled: bool = False  # stage B also wrote <id>.profile.mlir (a symbolic program sized)
    args: Annotated[list[Annotated[str, Field(max_length=4096)]],
                    Field(max_length=MAX_PROGRAM_ARGS)] = Field(default_factory=list)
    outs: Annotated[list[Annotated[str, Field(max_length=4096)]],
                    Field(max_length=MAX_PROGRAM_ARGS)] = Field(default_factory=list)


def _true(value: bool) -> bool:
    if value is not True:
        raise ValueError("must be true")
    return value


def _false(value: bool) -> bool:
    if value is not False:
        raise ValueError("must be false")
    return value


Seconds = Annotated[float, Field(ge=0, le=86_400)]


class OutputOk(_Strict):
    ok: Annotated[bool, AfterValidator(_true)]  # strict bool: 1 is not true
    value: Any  # tagged output tree, decoded and bounded by jaxjudge.grading.compare.decode_output
    seconds: Seconds | None = None  # the test's run time in stage B (absent in old caches)


class OutputFailed(_Strict):
    ok: Annotated[bool, AfterValidator(_false)]
    error: Message = ""
    seconds: Seconds | None = None


Count = Annotated[int, Field(ge=0, le=1 << 40)]
MAX_OBSERVED_LOOPS = 256  # stage B's observer records at most this many loop runs
MAX_OBSERVED_STEPS = 1024
MAX_GROUPS = 64
MAX_OUTPUTS = 4096


MAX_SLOTS = 24
MAX_KNOCK_PARTS = 4  # observe.KNOCK_PARTS
# observe_trajectory.py's limits: rows for 0 .. 48 steps, candidate loops, a row's outputs
MAX_TRAJECTORY_ROWS = 49
MAX_TRAJECTORY_LOOPS = MAX_FOLLOWED
MAX_ROW_ELEMENTS = 4096


class ObservedSlot(_Strict):
    """One carried value of an observed loop run (jaxjudge.analysis.observed.Slot)."""

    first: Annotated[list[Annotated[int, Field(ge=0, le=MAX_OBSERVED_STEPS)] | None],
                     Field(max_length=MAX_GROUPS)]
    touches: Annotated[list[Annotated[int, Field(ge=0, le=MAX_OBSERVED_STEPS)]],
                       Field(max_length=MAX_GROUPS)]
    kept: Annotated[list[bool | None], Field(max_length=MAX_OBSERVED_STEPS)]
    live: bool
    # per group: the step at which every element it alone moved was updated, once (observe.py)
    single: Annotated[list[Annotated[int, Field(ge=0, le=MAX_OBSERVED_STEPS)] | None],
                      Field(max_length=MAX_GROUPS)] = Field(default_factory=list)
    # its knockout part (ObservedLoop.exit_parts, needed)
    part: Annotated[int, Field(ge=0, lt=MAX_KNOCK_PARTS)] | None = None


class ObservedLoop(_Strict):
    """One loop run stage B's observer recorded (jaxjudge.analysis.observed.LoopRun)."""

    index: Annotated[int, Field(ge=-1, le=1 << 31)]
    depth: Annotated[int, Field(ge=0, le=1024)]
    steps: Annotated[int, Field(ge=0, le=MAX_OBSERVED_STEPS)]
    entry: Annotated[list[Count], Field(max_length=MAX_GROUPS)]
    entry_max: Annotated[list[Count], Field(max_length=MAX_GROUPS)] = Field(default_factory=list)
    exit: Annotated[list[Count], Field(max_length=MAX_GROUPS)] = Field(default_factory=list)
    # per knockout part (its first carried values one by one, the rest together), per group
    # per group: where its change entered the update again, or entered and left (observe.py)
    enters: Annotated[list[Annotated[int, Field(ge=0, le=MAX_OBSERVED_STEPS)] | None],
                      Field(max_length=MAX_GROUPS)] = Field(default_factory=list)
    # per group: in the update from a step after the first to the end (a mask that opened)
    for_good: Annotated[list[bool], Field(max_length=MAX_GROUPS)] = Field(default_factory=list)
    exit_parts: Annotated[list[Annotated[list[Count], Field(max_length=MAX_GROUPS)]],
                          Field(max_length=MAX_KNOCK_PARTS)] = Field(default_factory=list)
    # per knockout part: how far setting it back at the end moved the outputs (None: unknown)
    needed: Annotated[list[Annotated[float, Field(ge=0.0, le=1.0)] | None],
                      Field(max_length=MAX_KNOCK_PARTS)] = Field(default_factory=list)
    # per single knockout part: how far the outputs are from the whole variant's with only
    # that part's change kept
    alone: Annotated[list[Annotated[float, Field(ge=0.0, le=1.0)] | None],
                     Field(max_length=MAX_KNOCK_PARTS)] = Field(default_factory=list)
    work: Annotated[list[Count], Field(max_length=MAX_OBSERVED_STEPS)]
    slots: Annotated[list[ObservedSlot], Field(max_length=MAX_SLOTS)] = Field(
        default_factory=list)
    # per injected step: did changing what it read move the program's outputs
    reached: Annotated[list[bool | None], Field(max_length=MAX_OBSERVED_STEPS)] = Field(
        default_factory=list)


MAX_TRAJECTORY_STATES = 1024  # observe_trajectory.py: per loop, (steps) x (values)
MAX_TRAJECTORY_KICKS = 1024
Step = Annotated[int, Field(ge=0, le=MAX_TRAJECTORY_ROWS - 1)]
Row = Annotated[list[float | None], Field(max_length=MAX_ROW_ELEMENTS)]


class TrajectoryState(_Strict):
    """What a followed loop's first run carries in one slot after `step` steps."""

    step: Step
    slot: Annotated[int, Field(ge=0, le=1 << 20)]
    values: Row


class TrajectoryKick(_Strict):
    """The outputs with that slot's value kicked after `step` steps, one way (sign)."""

    step: Step
    slot: Annotated[int, Field(ge=0, le=1 << 20)]
    sign: Literal[1, -1]
    row: Row


# observe_trajectory.py's restarts: per kick, two readouts x three offsets
MAX_TRAJECTORY_RESTARTS = 6 * MAX_TRAJECTORY_KICKS


class TrajectoryReadout(_Strict):
    """The outputs with that slot's value kicked after `step` steps and the loop left `read`
    steps later: what the program's own code reads the kicked state out as."""

    step: Step
    slot: Annotated[int, Field(ge=0, le=1 << 20)]
    sign: Literal[1, -1]
    read: Literal[0, 1]
    row: Row


class TrajectoryRestart(_Strict):
    """The outputs of the program started from a kicked state as its output reads it `read`
    steps after the kick, the loop stopped after the steps the kicked run had left then (plus
    `offset`)."""

    step: Step
    slot: Annotated[int, Field(ge=0, le=1 << 20)]
    sign: Literal[1, -1]
    read: Literal[0, 1]
    offset: Literal[0, -1, 1]
    row: Row


class TrajectoryLoop(_Strict):
    """One loop's answers step by step (stages/observe_trajectory.py): rows[k] are the
    program's outputs, flattened, with the loop stopped after k steps (NaN as None)."""

    index: Count  # the while op's place in the program text
    steps: Annotated[int, Field(ge=1, le=MAX_TRAJECTORY_ROWS - 1)]
    rows: Annotated[list[Annotated[list[float | None], Field(max_length=MAX_ROW_ELEMENTS)]],
                    Field(max_length=MAX_TRAJECTORY_ROWS)]
    # each output's elements in a row, in order (complex ones twice: real, then imaginary)
    sizes: Annotated[list[Count], Field(max_length=MAX_OUTPUTS)] = Field(default_factory=list)
    # the steps after which each row left the loop (empty: 0, 1, ..., steps)
    at: Annotated[list[Annotated[int, Field(ge=0, le=MAX_TRAJECTORY_ROWS - 1)]],
                  Field(max_length=MAX_TRAJECTORY_ROWS)] = Field(default_factory=list)
    # what its first run carries after the kick steps, and the outputs with each value kicked
    states: Annotated[list[TrajectoryState], Field(max_length=MAX_TRAJECTORY_STATES)] = Field(
        default_factory=list)
    kicks: Annotated[list[TrajectoryKick], Field(max_length=MAX_TRAJECTORY_KICKS)] = Field(
        default_factory=list)
    readouts: Annotated[list[TrajectoryReadout],
                        Field(max_length=2 * MAX_TRAJECTORY_KICKS)] = Field(default_factory=list)
    restarts: Annotated[list[TrajectoryRestart],
                        Field(max_length=MAX_TRAJECTORY_RESTARTS)] = Field(default_factory=list)

    @model_validator(mode="after")
    def _rows_match_at(self) -> TrajectoryLoop:
        """One row per step count, increasing, from 0 to `steps`: the rule reads them so."""
        at = self.at or list(range(self.steps + 1))
        if len(at) != len(self.rows) or at != sorted(set(at)) or at[0] != 0 or (
                at[-1] != self.steps):
            raise ValueError("rows do not match the steps they were taken at")
        return self


class ObservedResult(_Strict):
    """What stage B's observer saw one program do on one test (or why it could not look)."""

    status: Literal["ok", "unobservable", "over_budget", "over_records", "error"]
    reason: Message = ""
    groups: Annotated[int, Field(ge=0, le=MAX_GROUPS)] = 0
    group_elements: Count = 0
    work: Count = 0  # element operations the run took (evaluator.py's count)
    outputs: Annotated[list[Count], Field(max_length=MAX_GROUPS)] = Field(default_factory=list)
    loops: Annotated[list[ObservedLoop], Field(max_length=MAX_OBSERVED_LOOPS)] = Field(
        default_factory=list)
    # per group: the computing ops whose result moved with that group only (code per index)
    private: Annotated[list[Count], Field(max_length=MAX_GROUPS)] = Field(default_factory=list)
    # of them, per group: the ops run inside a loop's body
    private_looped: Annotated[list[Count], Field(max_length=MAX_GROUPS)] = Field(
        default_factory=list)
    # disjoint sets of 2 or more groups (up to half) with ops of their own outside loops
    chunks: Annotated[int, Field(ge=0, le=MAX_GROUPS)] = 0
    # per tapped activation op: per program output, the elements that moved
    activations: Annotated[list[Annotated[list[Count], Field(max_length=MAX_OUTPUTS)]],
                           Field(max_length=32)] = Field(default_factory=list)
    # per tapped activation op: per program output, how far it moved (0 to 1 of its size)
    activation_sizes: Annotated[
        list[Annotated[list[Annotated[float, Field(ge=0.0, le=1.0)]],
                       Field(max_length=MAX_OUTPUTS)]],
        Field(max_length=32)] = Field(default_factory=list)
    # per tapped activation op: per output, the largest share of its elements one element of
    # the op's first run moved, changed alone
    activation_spread: Annotated[
        list[Annotated[list[Annotated[float, Field(ge=0.0, le=1.0)]],
                       Field(max_length=MAX_OUTPUTS)]],
        Field(max_length=32)] = Field(default_factory=list)
    # a trajectory run: per loop stopped step by step, its outputs (TrajectoryLoop)
    trajectory: Annotated[list[TrajectoryLoop], Field(max_length=MAX_TRAJECTORY_LOOPS)] = Field(
        default_factory=list)
    # the budget ran out before every candidate loop was followed
    trajectory_unfinished: bool = False
    # an entry offered candidates: the program and test stage B picked (observing._second_tests)
    picked_program: Name | None = None
    picked_test: Name | None = None


class PartDiff(_Strict):
    """Where one part of the custom_vjp's rules differs from solve's output on one test
    (stage B compared them at the problem's tolerance)."""

    differing: Count
    total: Count
    index: Annotated[list[Count], Field(max_length=8)] = Field(default_factory=list)
    rule: float | None = None
    solve: float | None = None


# The custom_vjp's rules as stage A exports them: each part at x's shape, then ("backward@1")
# at each other shape the function was called at (x's own again when there is none).
RulePart = Literal["function", "forward", "backward",
                   "function@1", "forward@1", "backward@1",
                   "function@2", "forward@2", "backward@2"]
RULE_PARTS: tuple[str, ...] = get_args(RulePart)


class RuleRunOutput(_Strict):
    """The rules run on one test: an error, or per part where it differs from solve."""

    ok: bool
    error: Message = ""
    parts: Annotated[dict[RulePart, PartDiff],
                     Field(max_length=len(RULE_PARTS))] = Field(default_factory=dict)


class StageBResult(_Strict):
    """jaxjudge/stages/execute.py's result.json."""

    status: Literal["ok", "rejected"]
    message: Message = ""
    timings: Timings = Field(default_factory=dict)
    jax_version: Name | None = None
    program: Name | None = None  # rejected: which program
    programs: Annotated[dict[Name, ProgramEntry], Field(max_length=MAX_EXPORTS)] | None = None
    engines: Annotated[list[Literal["interpret", "xla"]], Field(max_length=MAX_ENGINES)] = (
        Field(default_factory=list))
    outputs: Annotated[dict[Name, OutputOk | OutputFailed],
                       Field(max_length=MAX_TESTS)] | None = None
    cached: bool = False
    observed: Annotated[dict[Name, ObservedResult], Field(max_length=64)] | None = None
    # the custom_vjp's rules run on their own, per test (jaxjudge.grading.rules_run)
    rule_outputs: Annotated[dict[Name, RuleRunOutput], Field(max_length=MAX_TESTS)] | None = None

    @model_validator(mode="after")
    def _ok_has_outputs(self) -> StageBResult:
        if self.status == "ok" and (self.outputs is None or self.programs is None):
            raise ValueError("status ok without outputs or programs")
        return self


def load_object(data: bytes) -> dict[str, Any]:
    """The JSON object in a result file's bytes (NaN/Infinity allowed, as Python's json writes
    them); MalformedResult for anything else, however deep or odd."""
    try:
        obj = json.loads(data)
    except RecursionError:
        raise ResultTooDeep("nested deeper than Python's json module reads") from None
    except ValueError as exc:  # UnicodeDecodeError is a ValueError
        raise MalformedResult(f"not JSON: {str(exc)[:200]}") from None
    if not isinstance(obj, dict):
        raise MalformedResult(f"not a JSON object but {type(obj).__name__}")
    return obj


def _validate(model: type[_Strict], data: bytes) -> Any:
    obj = load_object(data)
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        where = "; ".join(f"{'.'.join(map(str, e['loc']))[:200]}: {e['msg'][:200]}"
                          for e in errors[:3])
        deep = any(isinstance((e.get("ctx") or {}).get("error"), _Deep) for e in errors)
        kind = ResultTooDeep if deep else MalformedResult
        raise kind(f"{exc.error_count()} schema error(s): {where}") from None
    except RecursionError:  # defensive: the validators above are iterative
        raise ResultTooDeep("nested too deeply") from None


def parse_stage_a(data: bytes) -> StageAResult:
    """Stage A's result.json bytes -> a validated result, or MalformedResult."""
    return _validate(StageAResult, data)


def parse_stage_b(data: bytes) -> StageBResult:
    """Stage B's result.json bytes -> a validated result, or MalformedResult."""
    return _validate(StageBResult, data)
