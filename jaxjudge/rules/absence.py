"""`no_loop_over_dim`: the work over a dimension is done at once, not one slice at a time.

`independent_of_dim` only sees Python loops (they grow the program); a `lax.map`, `scan` or
`fori_loop` over the dimension keeps the program the same size. This rule also reads every
while loop's trip count (worked out from its counter, as `loop_over_dim` does, in
jaxjudge.analysis.tripcount) and compares them between programs that differ only in the dimension: a
loop whose count changes with it runs over it (or over chunks of it). Loops over other
dimensions (a `fori_loop` over the features inside a `vmap` over the points) keep their count
and pass. Trip counts need static shapes: a problem using the rule is exported per shape.
A loop of a constant number of steps over slices padded to the constraint's maximum keeps its
count whatever the dimension: it is found by what it indexes instead (jaxjudge.analysis.dimindex:
an input, or a copy of it, read along the dimension's axis at an index that moves with the
loop's steps, a slice of at most half of the axis per step). A row selected with no indexing
op (a one-hot product, a mask and a sum) is not seen.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Annotated, Any

from pydantic import Field

from jaxjudge.analysis.dataflow import Budget, Graph, TooComplex, build_graph
from jaxjudge.analysis.dimindex import Visit, dim_axes, visits
from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.analysis.folding import Value, fold_constants
from jaxjudge.analysis.observed_visits import visited
from jaxjudge.analysis.parsed import Unreadable
from jaxjudge.analysis.region import noted, region_of
from jaxjudge.analysis.stablehlo import Module, ParseError
from jaxjudge.analysis.tripcount import trip_count
from jaxjudge.rules.growth import growth
from jaxjudge.rules.outcome import RuleOutcome
from jaxjudge.rules.registry import RuleOptions, register
from jaxjudge.rules.structure import _DIM as DIM_PATTERN
from jaxjudge.rules.structure import _loop_region, _parse, _Parsed, _shapes

_FIX = ("compute every slice at once: jax.vmap, or array operations (broadcasting, matmul, "
        "einsum) over the whole axis")


def _counts(module: Module, budget: Budget) -> tuple[Graph, list[Value], list[int | None]]:
    """The inlined program, its folded constants and every while loop's trip count in its
    order (None: not proven)."""
    g = build_graph(module)
    g.budget = budget
    budget.spend(len(g.steps))
    values = fold_constants(g)
    out: list[int | None] = []
    for loop in g.loops:
        counted = trip_count(g, values, loop)
        out.append(None if counted is None else counted[0])
    return g, values, out


def _describe(counts: Counter[int | None]) -> str:
    parts = [f"{n} loop{'s' if n > 1 else ''} of {c} step{'s' if c != 1 else ''}"
             if c is not None else
             f"{n} loop{'s' if n > 1 else ''} of an unknown number of steps"
             for c, n in sorted(counts.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))]
    return ", ".join(parts) or "no loop"


class NoLoopOptions(RuleOptions):
    dims: tuple[Annotated[str, Field(pattern=DIM_PATTERN)], ...] = Field(
        min_length=1, max_length=8, description="named dimensions no loop may run over, e.g. "
                                                "[N, M]")


@register("no_loop_over_dim", "program", NoLoopOptions, static_shapes=True, probe="dims")
def check_no_loop_over_dim(programs: Sequence[ProgramInfo], *, dims: Sequence[str]
                           ) -> RuleOutcome:
    """No loop runs over the dimensions (Python, lax.map, scan, fori or while loop).

    For each dimension, the program does not grow with it (no Python loop: compared as
    `independent_of_dim` does, at the judge's probe sizes, in run mode too), and every program
    has the same while loops, by trip count, as the programs that differ from it only in that
    dimension, at sizes >= 2 (the tests' and the probe shapes: no lax.map, scan, fori_loop or
    while_loop whose steps follow it). A loop whose trip count cannot be worked out from its
    counter fails: it could be running over one.

    Whatever its trip count (a constant one over slices padded to the largest size too), a
    loop of two or more steps also runs over a dimension when, inside it, a dynamic_slice,
    gather, dynamic_update_slice or scatter indexes an input (or a copy of it: padded,
    reshaped, transposed, broadcast, converted, computed from it elementwise or by a
    dot_general that keeps the axis) along that dimension's axis, at an index computed from
    a value the loop changes from step to step (its counter, or another value it carries),
    and takes at most half of the axis per step (one row, one
    example, one head). An input's axis runs along a dimension when its size is that
    dimension's value in every program and the dimension takes two values or more among them
    (the probe sizes). A loop over another axis (the features, the positions) reads whole
    slices of the dimension and passes; a row picked with no indexing op (a one-hot product,
    a mask and a sum, a roll) is not seen (see jaxjudge.analysis.dimindex)."""
    parsed = _parse(programs)
    if isinstance(parsed, Unreadable):
        return RuleOutcome(False, parsed.message)
    budget = Budget()  # one for all of this grade's programs
    counts: list[_Loops] = []
    for item in parsed:
        p = item.program
        try:
            g, values, found = _counts(item.module, budget)
        except (ParseError, TooComplex) as exc:
            return RuleOutcome(False, f"The exported program for input shapes {p.signature} "
                                      f"could not be analyzed ({exc}).")
        if None in found:
            return RuleOutcome(False, (
                f"For input shapes {_shapes(p)} a loop's trip count cannot be worked out from "
                f"its counter, so it could be running over {_or(dims)}. Loops over other "
                f"dimensions are allowed as jax.lax.scan or jax.lax.fori_loop with integer "
                f"bounds; over {_or(dims)}, {_FIX}."),
                region=_loop_region(item, g, [found.index(None)], 0))
        counts.append(_Loops(item, g, found, values))
    axes = dim_axes([c.item.program for c in counts], [c.g.main_arg_types for c in counts], dims)
    try:
        for c in counts:
            c.visits = visits(c.g, c.values, c.found, c.item.program.args, axes, dims,
                              c.item.program.text, c.item.program.dims) if axes else []
    except TooComplex as exc:
        return RuleOutcome(False, f"The exported programs could not be analyzed ({exc}).")
    grown: list[str] = []
    for dim in dims:
        outcome = growth(parsed, dim)
        grown.append(outcome.message)
        if outcome.passed:
            outcome = _same_loops(counts, dim)
        if outcome.passed:
            outcome = _no_visits(counts, dim)
        if outcome.passed:
            outcome = _not_seen_visiting(parsed, dim)
        if not outcome.passed:
            return outcome
    return RuleOutcome(True, f"No loop over {_or(dims)} was found: the programs that differ "
                             f"only in {' or '.join(dims)} (sizes >= 2) have the same loops, "
                             f"and no loop indexes {_or(dims)} at its counter. "
                             + " ".join(grown))


@dataclass
class _Loops:
    """One program's inlined graph and its loops' trip counts, in program order."""

    item: _Parsed
    g: Graph
    found: list[int | None]
    values: list[Value]
    visits: list[Visit] = field(default_factory=list)  # loops indexing a dimension's axis

    def counter(self) -> Counter[int | None]:
        return Counter(self.found)

    def extra(self, other: _Loops) -> int:
        """The index of a loop of this program with a trip count `other` lacks (or 0)."""
        spare = other.counter()
        for i, c in enumerate(self.found):
            if spare[c] > 0:
                spare[c] -= 1
            else:
                return i
        return 0


def _same_loops(counts: list[_Loops], dim: str) -> RuleOutcome:
    """Programs that differ only in `dim` have the same loops, by trip count."""
    groups: dict[tuple[tuple[str, int], ...], dict[int, _Loops]] = {}
    for found in counts:
        p = found.item.program
        rest = tuple(sorted((k, v) for k, v in p.dims.items() if k != dim))
        groups.setdefault(rest, {})[p.dims[dim]] = found
    for by_value in groups.values():
        # As for growth: a size of 1 may be a shape special case (a loop there over something
        # else, or none), so it is never compared: only sizes >= 2.
        for lo, hi in pairwise(sorted(v for v in by_value if v >= 2)):
            a, b = by_value[lo], by_value[hi]
            if a.counter() != b.counter():
                shown, other = (b, a) if len(b.found) >= len(a.found) else (a, b)
                return RuleOutcome(False, (
                    f"Your program loops over {dim}: for {dim}={lo} it has "
                    f"{_describe(a.counter())}, for {dim}={hi} {_describe(b.counter())} "
                    f"(the other dimensions equal). A lax.map, scan, fori_loop or while_loop "
                    f"over {dim} (or over chunks of it) works one slice at a time; {_FIX}."),
                    region=_loop_region(shown.item, shown.g, [shown.extra(other)], 0))
    return RuleOutcome(True, f"No loop runs over {dim}.")


def _no_visits(counts: list[_Loops], dim: str) -> RuleOutcome:
    """No loop of any program reads an input along `dim`'s axis one slice at a time (shown
    first at a size >= 2, where a learner reads the slice as a row of several)."""
    for c in sorted(counts, key=lambda c: c.item.program.dims.get(dim, 0) < 2):
        for v in c.visits:
            if v.dim != dim:
                continue
            what = v.op.name.removeprefix("stablehlo.")
            return RuleOutcome(False, (
                f"Your program loops over {dim}: for {_shapes(c.item.program)} a loop of "
                f"{v.count} steps {'writes' if 'update' in what or what == 'scatter' else 'reads'}"
                f" {v.path} (or a copy of it) one slice along {dim} per step ({v.taken} of "
                f"{v.size}), at an index that moves with the loop's steps (a {what}). A loop "
                f"that visits {dim} one "
                f"slice at a time is a loop over {dim}, whatever its number of steps (padded "
                f"to the largest size too); {_FIX}."),
                region=region_of(c.item.module, [v.op], c.item.program)
                or _loop_region(c.item, c.g, [v.loop], 0))
    return RuleOutcome(True, f"No loop visits {dim} one slice at a time.")


def _not_seen_visiting(parsed: Sequence[Any], dim: str) -> RuleOutcome:
    """What stage B saw the program do (jaxjudge.analysis.observed): no loop taking the
    dimension's indices up one step at a time."""
    for item in parsed:
        why = visited(item.program.observed, dim)
        if why is not None:
            return RuleOutcome(False, f"{why}. {_FIX[0].upper()}{_FIX[1:]}.",
                               region=noted(item.program, f"a loop visits {dim} when run"))
    return RuleOutcome(True, f"No loop was seen visiting {dim} when the program ran.")


def _or(items: Sequence[str]) -> str:
    return " or ".join(items)
