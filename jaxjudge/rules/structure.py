"""Program-level rules about a program's shape: loops (sizes: size.py, dot types: products.py).

All read the verified exported programs (trusted side, authoritative), through the same capped
parser and inliner as the rematerialization rule. Sizes and loop bounds need static shapes, so
problems using `max_intermediate_elements` or `loop_over_dim` are exported once per input
shape (`static_shapes=True`); each program then carries its dimensions' values. Growth with a
dimension (`independent_of_dim`, and the check loop rules share) is jaxjudge.rules.growth.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from jaxjudge.analysis.dataflow import (
    Budget,
    Graph,
    TooComplex,
    build_graph,
)
from jaxjudge.analysis.exported import ProgramInfo, Region
from jaxjudge.analysis.expr import Expr
from jaxjudge.analysis.loops import MAX_NAMES, LoopFinding, analyze_loops
from jaxjudge.analysis.observed import judge_loop, matching, unseen
from jaxjudge.analysis.parsed import Parsed as _Parsed
from jaxjudge.analysis.parsed import Unreadable
from jaxjudge.analysis.parsed import all_ops as _all_ops
from jaxjudge.analysis.parsed import parse_programs as _parse
from jaxjudge.analysis.parsed import shapes_text as _shapes
from jaxjudge.analysis.region import noted, region_of
from jaxjudge.analysis.stablehlo import (
    Op,
    ParseError,
)
from jaxjudge.analysis.stepslices import MAX_STEP_SLICES
from jaxjudge.analysis.trajectory import answered, shows_a_step
from jaxjudge.analysis.trajectory import judge as judge_trajectory
from jaxjudge.analysis.words import listed
from jaxjudge.rules.growth import growth
from jaxjudge.rules.outcome import RuleOutcome
from jaxjudge.rules.registry import RuleOptions, register

_DIM = r"^[A-Za-z_][A-Za-z0-9_]*$"


# -- loop_over_dim (independent_of_dim: jaxjudge.rules.growth) -------------------------------

_PATH = r"^[A-Za-z_][A-Za-z0-9_.]*$"


class RestartFrom(BaseModel):
    """An output that reads out a loop's state, and the input the program starts from."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    input: str = Field(pattern=_PATH, description="the input the state starts from")
    output: str = Field(pattern=_PATH, description="the output that reads the state out")
    any_scale: bool = Field(
        default=False,
        description="the answer does not depend on the input's scale (a power iteration's "
                    "start vector): the restart starts from the readout brought to the test "
                    "input's norm times a secret factor in [1/2, 2], so a program cannot tell "
                    "it from a test by its norm")


class LoopOptions(RuleOptions):
    dim: str | None = Field(
        default=None, pattern=_DIM,
        description="the named dimension the loop runs over (the program must not grow with "
                    "it); omit it for a fixed count given by trip_count")
    trip_count: Expr | None = Field(
        default=None, description="the loop's trip count as an expression (default: dim)")
    depends_on: tuple[Annotated[str, Field(pattern=_PATH)], ...] = Field(
        default=(), max_length=MAX_NAMES,
        description="input paths the loop's carried state is computed from at every step, "
                    "e.g. [x] (default: any input)")
    only_through_loop: bool | tuple[Annotated[str, Field(pattern=_PATH)], ...] = Field(
        default=False,
        description="the outputs depend on the depends_on inputs (true), or on the inputs "
                    "listed (e.g. [u]: a start vector), only through the carried state of the "
                    "loops doing the work: nothing is computed from them beside the loop")
    sliced: tuple[Annotated[str, Field(pattern=_PATH)], ...] = Field(
        default=(), max_length=MAX_NAMES,
        description="input paths the loop reads one step's slice at a time (x[t], a scan's "
                    "row, a block of keys): the outputs are computed from them, across "
                    "elements, only through slices of at most their size / trip count "
                    f"elements, taken at no more than {MAX_STEP_SLICES} places, never from all "
                    "of them at once, nor from a copy of them the loop rebuilt from its slices "
                    "(default: not checked)")
    every_step: bool = Field(
        default=False,
        description="the update runs at every step but one (a first step that only sets the "
                    "starting value): a jnp.where or lax.cond on the loop counter or a flag "
                    "carried beside it (or a factor computed from them) that passes the "
                    "carried value along at more steps fails; the gates are run step by step")
    trajectory: bool = Field(
        default=False,
        description="the loop does the reference's steps: on every test signature's first "
                    "test, with the loop stopped after k steps the program answers what the "
                    "reference answers after k steps (up to one step of offset), and holds "
                    "no answer the reference computes later (jaxjudge.analysis.trajectory)")
    trajectory_response: bool = Field(
        default=False,
        description="with trajectory: also, after the first, middle and last but one step "
                    "some value the loop carries is one the reference's loop carries then (up "
                    "to a factor), and a change to it moves the answer as the same change to "
                    "the reference's moves the reference's (jaxjudge.analysis.trajectory; for a "
                    "problem whose honest loops all carry one of the reference's values)")
    trajectory_restart: RestartFrom | None = Field(
        default=None,
        description="with trajectory_response: the output that reads out the loop's state and "
                    "the input the program starts from ({input = \"u\", output = \"u\"}: a "
                    "power iteration's vector). After each kick, the loop must go on from the "
                    "changed state as the program does when started from what that output "
                    "then gives (jaxjudge.analysis.trajectory: a table read by a counter, or a "
                    "junk value beside the state, does not)")
    trajectory_slack: float = Field(
        default=10.0, ge=1.0, le=1000.0,
        description="with trajectory: the multiple of the problem's tolerance within which a "
                    "step's answer is the reference's (rounding in another order of "
                    "operations builds up over the steps)")
    hint: str = Field(default="", max_length=400,
                      description="what to do instead, appended to a failure's message")

    @field_validator("only_through_loop")
    @classmethod
    def _few_names(cls, v: bool | tuple[str, ...]) -> bool | tuple[str, ...]:
        if not isinstance(v, bool) and not 0 < len(v) <= MAX_NAMES:
            raise ValueError(f"list 1 to {MAX_NAMES} input paths, or say true or false")
        return v

    @model_validator(mode="after")
    def _count_known(self) -> LoopOptions:
        if self.dim is None and self.trip_count is None:
            raise ValueError("give dim, trip_count, or both")
        if self.trajectory_response and not self.trajectory:
            raise ValueError("trajectory_response reads the trajectory runs: set trajectory")
        if self.trajectory_restart is not None and not self.trajectory_response:
            raise ValueError("trajectory_restart reads the kicked runs: set "
                             "trajectory_response")
        return self


@register("loop_over_dim", "program", LoopOptions, static_shapes=True, probe="dim")
def check_loop_over_dim(
    programs: Sequence[ProgramInfo], *, dim: str | None = None, trip_count: Expr | None = None,
    depends_on: Sequence[str] = (), only_through_loop: bool | Sequence[str] = False,
    sliced: Sequence[str] = (), every_step: bool = False,
    hint: str = "",
    trajectory: bool = False,
    trajectory_slack: float = 10.0,
    trajectory_response: bool = False,
    trajectory_restart: RestartFrom | None = None,
) -> RuleOutcome:
    """A loop of exactly trip_count steps (from its counter) carries state built from depends_on.

    Every program (one per input shape: the tests' and the judge's probe shapes) has a while
    loop (scan, fori_loop, while_loop or map) whose trip count, worked out from its counter's
    start, step and bound (or by running an integer condition on the counter alone, see
    jaxjudge.analysis.tripcount), is the trip count (default: the dimension), and that loop
    carries a value it updates at every step from its previous value and from the `depends_on`
    inputs, which reaches the outputs; with `only_through_loop`, the outputs depend on the
    `depends_on` inputs (or on the inputs it lists) only through the state of such loops (see
    jaxjudge.analysis.loops); with `sliced`, the outputs are computed from the inputs it lists,
    across elements, only through slices of one step's share (their elements / trip count:
    x[t], a block of keys), never from all of them at once, at one step or before or after the
    loop (see jaxjudge.analysis.stepslices); with `every_step`, that update runs at every step
    but one (a first step that only sets the starting value), not under a jnp.where or
    lax.cond on the counter or on a flag carried beside it (or scaled by a function of them)
    that passes the value along at more steps: the gates are run step by step (see
    jaxjudge.analysis.stepgates). Other loops may run beside it or
    around it. The program does not grow with the dimension, compared as `independent_of_dim`
    does at the judge's probe sizes (in run mode too), in units of the trip count: a Python
    loop unrolling one copy of its body per step (per row, or per block of T // 4) fails; a
    special case at one size passes. A size of 1 may be special-cased: a program where
    the dimension is 1 needs no loop when a program at another size has one.
    Without a dimension, the trip count is a fixed one (e.g. "8": a stated number of
    iterations) and growth is not compared.
"""
    parsed = _parse(programs)
    if isinstance(parsed, Unreadable):
        return RuleOutcome(False, parsed.message)
    if trip_count is None and dim is None:
        return RuleOutcome(False, "The requirement names neither a dimension nor a trip count "
                                  "(a problem package error).")
    count = trip_count if trip_count is not None else Expr(str(dim))
    names = listed(list(depends_on)) if depends_on else "the inputs"
    through = names if isinstance(only_through_loop, bool) else listed(list(only_through_loop))
    budget = Budget()  # one for all of this grade's programs
    # (the program has a loop, want, message, where)
    failures: list[tuple[bool, int, str, Region | None]] = []
    shown: Region | None = None
    # A size of 1 may be special-cased (`if x.shape[0] == 1: return ...`, as statements invite)
    # when another size shows the loop.
    looped = [item for item in parsed if dim is None or item.program.dims.get(dim) != 1]
    for item in looped or parsed:
        p = item.program
        try:
            want = count.value(p.dims)
        except (KeyError, ZeroDivisionError):
            return RuleOutcome(False, f"The trip count {count} cannot be evaluated for input "
                                      f"shapes {p.signature} (the program has no static shapes).")
        try:
            g = build_graph(item.module)
            g.budget = budget
            budget.spend(len(g.steps))
            if len(g.main_args) != len(p.args):
                return RuleOutcome(False, "The exported program could not be analyzed (its "
                                          "arguments do not match their paths).")
            loops = analyze_loops(g, p.args, depends_on, want, only_through_loop,
                                  _read_sliced(p, tuple(sliced), want), p.text, every_step)
        except (ParseError, TooComplex) as exc:
            return RuleOutcome(False, f"The exported program for input shapes {p.signature} "
                                      f"could not be analyzed ({exc}).")
        right = [i for i, loop in enumerate(loops) if loop.count == want]
        working = [i for i in right if loops[i].works]
        where = _loop_region(item, g, (working or right or list(range(len(loops))))[:1], want)
        if not working:
            failures.append((bool(loops), want,
                             _loop_failure(p, loops, count, want, dim, names, through,
                                           listed(list(sliced)), hint),
                             where))
        elif (seen := _observed_failure(p, want, tuple(sliced), every_step,
                                        hint)) is not None:
            failures.append((True, want, seen, where))
        shown = shown or where
    if trajectory and not failures:
        why = _trajectory_failure([item.program for item in parsed], trajectory_slack)
        if why is not None:
            failures.append((True, 0, f"{why}. {hint}".strip(), shown))
    if failures:  # the most telling: a program with loops, the longest one
        worst = max(failures, key=lambda f: (f[0], f[1]))
        return RuleOutcome(False, worst[2], region=worst[3])
    done = (f"A loop runs {count} steps for every input shape and carries the computation (a "
            f"value updated at every step from its previous value and {names}, reaching your "
            f"outputs)")
    if dim is None:
        return RuleOutcome(True, done + ".", region=shown)
    each = "" if str(count) == dim else f"step ({count} in all)"
    grown = growth(parsed, dim, count.value, each)
    if not grown.passed:
        return grown
    return RuleOutcome(True, f"{done}. {grown.message}", region=shown)


def _read_sliced(p: ProgramInfo, sliced: tuple[str, ...], want: int) -> tuple[str, ...]:
    """The `sliced` inputs the program text decides for (`analysis.stepslices`): none where
    stage B ran the program and watched each step take up its share (the executed evidence
    decides there: a one-hot product that picks one block reads every block in the text, and
    only one as it runs), none at a probe shape no test runs (nothing runs there to hide a
    step's work in), all of them where a test runs a loop the observer does not follow
    (evidence that could not be gathered: the text decides, closed)."""
    if not sliced or not p.tested:
        return ()
    watched = any(obs.kind == "loop" and obs.sliced and obs.count == want
                  for obs in p.observed)
    return () if watched else sliced


def _observed_failure(p: ProgramInfo, want: int, sliced: tuple[str, ...], every_step: bool,
                      hint: str) -> str | None:
    """What the runs stage B observed say against the loop the text analysis accepted (the
    first that says something)."""
    if not (every_step or sliced):
        return None
    for obs in matching(p.observed, want, sliced):
        why = unseen(obs)
        if why is None:
            why = judge_loop(obs, every_step=every_step, sliced=bool(sliced),
                             names=listed(list(sliced)))
        if why is not None:
            return f"{why}. {hint}".strip()
    return None


def _trajectory_failure(programs: Sequence[ProgramInfo], slack: float) -> str | None:
    """Why the loop does not do the reference's steps (jaxjudge.analysis.trajectory), on the
    first test of each signature; or that no test shows a step (the evidence could not be
    gathered: the requirement fails closed)."""
    runs = {obs.test: obs for p in programs for obs in p.observed if obs.kind == "trajectory"}
    shown = False
    wrong: str | None = None  # a test whose answer is not the reference's: nothing to follow
    for obs in runs.values():
        why = unseen(obs)
        if why is None:
            rtol, atol = (slack * t for t in obs.tolerance)
            why = judge_trajectory(obs.trajectory, obs.reference, rtol, atol, obs.test,
                                   obs.unfinished, obs.response, obs.restart)
            if (why is not None and obs.reference is not None and obs.trajectory
                    and not answered(obs.trajectory, obs.reference, rtol, atol)):
                wrong = wrong or why  # the tests say so; the other tests decide
                continue
            shown = shown or (obs.reference is not None
                              and shows_a_step(obs.reference, rtol, atol))
        if why is not None:
            return why
    if not shown and wrong is not None:
        return wrong
    if not shown:
        return ("No test let the grader follow the loop step by step (on every one, the "
                "reference's answer is final after its first step), so the requirement cannot "
                "be confirmed (a problem package error)")
    return None


def _loop_region(item: _Parsed, g: Graph, which: list[int], want: int) -> Region:
    """The `stablehlo.while` of the inlined loop `which[0]` (with what starts it), or a note
    that the program has no loop."""
    if not which:
        return noted(item.program, f"no stablehlo.while in this program (wanted: {want} steps)")
    loop = g.loops[which[0]]
    inner = next((op for op in g.ops[loop.first:loop.end] if op is not None), None)
    whiles = [op for _, op in _all_ops(item.module) if op.name == "stablehlo.while"]
    holder = next((w for w in whiles if inner is not None and _holds(w, inner)), None)
    found = region_of(item.module, [holder], item.program, depth=1) if holder else None
    return found or noted(item.program, "the loop's while op could not be located")


def _holds(op: Op, inner: Op) -> bool:
    """Whether `inner` is one of the ops in `op`'s regions (at any depth)."""
    stack = [o for region in op.regions for block in region for o in block.ops]
    while stack:
        o = stack.pop()
        if o is inner:
            return True
        stack.extend(x for region in o.regions for block in region for x in block.ops)
    return False


def _plural(n: int) -> str:
    return f"{n} step" + ("" if n == 1 else "s")


def _steps(n: int, count: Expr, want: int, dim: str | None, dims: dict[str, int]) -> str:
    """A found trip count, and how it relates to the wanted one: "7 steps (T - 1)"."""
    text = str(count)
    whole = text if text.isidentifier() or text.isdigit() else f"({text})"
    tries: list[tuple[int, str]] = [(want, text)]
    if dim is not None and text != dim and dim in dims:
        tries += [(dims[dim], dim), (dims[dim] - 1, f"{dim} - 1"), (dims[dim] + 1, f"{dim} + 1")]
    tries += [(want - 1, f"{text} - 1"), (want + 1, f"{text} + 1")]
    tries += [(want // k, f"{whole} / {k}") for k in (2, 3, 4) if want % k == 0]
    tries += [(want * k, f"{k} * {whole}") for k in (2, 3, 4)]
    for value, label in tries:
        if value == n and n > 0:
            return f"{_plural(n)} ({label})"
    return _plural(n)


_UNKNOWN_FIX = (
    "A loop's trip count is worked out from its counter: write the loop as jax.lax.scan, or "
    "jax.lax.fori_loop with integer bounds (Python ints, or int32 values computed from them), "
    "or a jax.lax.while_loop whose condition reads only an integer counter that the body "
    "advances by a constant step (i + 1, i + 4) and constants (`i < n`, `i // 4 < n // 4`), "
    "not a carried value or a float.")


def _loop_failure(p: ProgramInfo, loops: list[LoopFinding], count: Expr, want: int,
                  dim: str | None, names: str, through: str, sliced: str = "",
                  hint: str = "") -> str:
    found = _loop_finding(p, loops, count, want, dim, names, through, sliced)
    return f"{found} {hint}".strip()


def _loop_finding(p: ProgramInfo, loops: list[LoopFinding], count: Expr, want: int,
                  dim: str | None, names: str, through: str, sliced: str) -> str:
    shapes = _shapes(p)
    if dim is None:
        over = f"Run the {_plural(want)}"
    else:
        over = f"Iterate over {dim}" if str(count) == dim else f"Run a loop of {count} steps"
    if not loops:
        return (f"For input shapes {shapes} no loop runs {count} = {_plural(want)} (the program "
                f"has no loop). {over} with jax.lax.scan or jax.lax.fori_loop: a "
                f"Python loop is unrolled into the program.")
    unknown = sum(1 for loop in loops if loop.count is None)
    right = [loop for loop in loops if loop.count == want]
    counts = sorted({loop.count for loop in loops if loop.count is not None and
                     loop.count != want}, reverse=True)
    others = [f"a loop of {_steps(n, count, want, dim, p.dims)}" for n in counts]
    if unknown:
        others.append("a loop whose trip count could not be determined" if unknown == 1 else
                      f"{unknown} loops whose trip counts could not be determined")
    if right:
        whys = {loop.why for loop in right}
        if "bypass" in whys:
            why = (f"your outputs also depend on {through} outside it (computed beside the "
                   f"loop, or passed through it unchanged), so it does not carry all of the work")
        elif "unsliced" in whys:
            why = (f"your outputs are computed from all of {sliced} at once (a product or a sum "
                   f"over it, before the loop, at one of its steps or after it, or over a copy "
                   f"of it rebuilt by the loop and then read whole after it), not from one "
                   f"step's slice of it at a time (x[t], a scan's row, a block)")
        elif "skipped" in whys:
            idle = min(loop.idle for loop in right if loop.why == "skipped")
            why = (f"the update of what it carries from its previous value and {names} is "
                   f"left out at {idle} of its {want} steps (under a jnp.where or "
                   f"jax.lax.cond on the loop counter or on a flag carried beside it, or "
                   f"scaled by a function of them), where the value is passed along unchanged; "
                   f"only a first step that sets the starting value may do so")
        elif "not_live" in whys:
            why = (f"what it computes from its previous value and {names} does not reach your "
                   f"outputs (it is discarded, or multiplied by 0)")
        elif "no_data" in whys:
            why = (f"no value it carries is computed at each step from its previous value "
                   f"together with {names} (a counter, or values passed along or stacked "
                   f"without combining them with what the loop carries)")
        else:
            why = "it carries nothing but its counter and values it passes along unchanged"
        beside = f" Other loops found: {', '.join(others)}." if others else ""
        loop = f"The loop over {dim}" if dim is not None else "That loop"
        return (f"For input shapes {shapes} a loop runs {count} = {_plural(want)}, but it does "
                f"not carry the computation: {why}.{beside} {loop} must carry the "
                f"state of the computation (the scan carry, or the fori_loop/while_loop "
                f"state), update it at every step from its previous value and {names}, and "
                f"produce what your outputs are made of.")
    found = "; ".join(others)
    fix = _UNKNOWN_FIX if unknown else (
        f"Run one loop step per step of the computation: {over[0].lower() + over[1:]} with "
        f"jax.lax.scan or jax.lax.fori_loop so that it runs exactly {count} steps.")
    return (f"For input shapes {shapes} no loop runs {count} = {_plural(want)} (found: {found}). "
            f"{fix}")
