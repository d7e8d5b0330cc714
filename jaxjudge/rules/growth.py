"""Growth with a dimension: `independent_of_dim`, and the growth half of the loop rules.

"The program is independent of B" means: one program serves every B (it was exported with B
symbolic), or the programs exported at two batch sizes the judge chooses, every other dimension
equal, have the same size up to fewer operations than B grew by. Code that runs once per
element of B while JAX traces (a Python loop or comprehension, a lax loop with `unroll`,
splitting an array into its rows) adds at least one operation per element, so it makes the
program grow; vectorized operations, `jax.vmap` and a rolled lax loop do not.

The sizes compared are the judge's, never the tests': a vectorized solution with a special case
for `B == 1` is exported per shape, and comparing its B = 1 program with its B = 4 one would
measure the special case, not a loop. So the problem's plan names *probe* sizes of the
dimension (`probe_sizes`: three of each parity from the smallest, allowed by the problem's
constraints, a step such as `multiple_of = 4` included, so that a loop taken only at odd or
even sizes, past a threshold or over the first few elements runs at three of them) and one
value of every other dimension (`probe_dims`); stage A exports the
submission at those abstract shapes (no values: it never sees more than shapes and dtypes)
whenever it exports per shape, stage B verifies those programs like the others, and the rule
compares only them: `loop_over_dim` and `no_loop_over_dim` as `independent_of_dim`, in run mode
as in submit mode, `loop_over_dim` counting the growth in steps of its trip count (one op per
block of `T // 4`). A message names what grows, read from the programs themselves: while loops,
copies of a lax loop's body, calls to one function, a loop body, or plain operations.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from math import lcm

from pydantic import Field

from jaxjudge.analysis.dataflow import Budget, TooComplex
from jaxjudge.analysis.dimrange import DimRange
from jaxjudge.analysis.exported import ProgramInfo, Region
from jaxjudge.analysis.observed_visits import written_per_index
from jaxjudge.analysis.parsed import Parsed, Unreadable, all_ops, parse_programs
from jaxjudge.analysis.region import noted, region_of
from jaxjudge.analysis.stablehlo import Module, Op, ParseError
from jaxjudge.analysis.words import listed
from jaxjudge.rules.outcome import RuleOutcome
from jaxjudge.rules.registry import RuleOptions, register

DIM_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
# Sizes below this are the ones code special-cases (empty, a single row, a pair): probes avoid
# them when the dimension's range allows.
SPECIAL_BELOW = 3
PROBE_GAP = 2  # two apart: the same parity, so `B % 2` special cases take the same branch
# Three sizes, two intervals: per-element code grows over both, while a structure that changes
# once between two sizes (a `lax.map` batch that fills up, an `if B > 4`) grows over one.
PROBES = 3
# The tests' own programs at only two sizes of a dimension are compared when per-step code
# would run at least this many steps more in the larger one (jaxjudge.rules.growth.growth).
TWO_SIZES_APART = 16
# Probe this many sizes of each parity: a loop taken only at odd or only at even sizes runs at
# three of them (jaxjudge.rules.growth.probe_sizes).
PER_PARITY = 3
# The function JAX's lax loops lower their body to, called once per copy of the body: a rolled
# loop calls it once in its while body, an unrolled one once per unrolled step
# (`closed_call` in recent JAX, `None` in 0.4.38; MLIR appends `_0`, `_1`... to repeats).
_LAX_BODY = re.compile(r"^(closed_call|None)(_[0-9]+)?$")
# Operations that move or relabel values: how many a slice of one element takes depends on the
# size (x[0] of a (1, D) array is a reshape alone), so per-element code is compared without them.
_LAYOUT = frozenset(f"stablehlo.{n}" for n in (
    "slice", "reshape", "broadcast_in_dim", "transpose", "convert", "concatenate", "pad",
    "dynamic_slice", "dynamic_update_slice", "bitcast_convert", "iota", "get_dimension_size",
    "get_tuple_element", "tuple", "return", "optimization_barrier")) | {"func.return"}


class DimOptions(RuleOptions):
    dim: str = Field(pattern=DIM_PATTERN, description="a named dimension of the problem")


# -- probe shapes ------------------------------------------------------------------------------

def _spaced(span: DimRange) -> tuple[int, ...]:
    """Up to PROBES sizes PROBE_GAP apart (or the least multiple of the span's step that is),
    as small as possible but past the special-cased sizes when the range allows."""
    gap = lcm(PROBE_GAP, span.multiple_of)
    for floor in (SPECIAL_BELOW, 2, 1, 0):
        lo = span.first(floor)
        if lo is not None and lo + gap <= span.high:
            return tuple(range(lo, min(span.high, lo + (PROBES - 1) * gap) + 1, gap))
    return ()


def probe_sizes(span: DimRange) -> tuple[int, ...]:
    """The sizes of the dimension to compare, allowed by `span`; () when the range holds no
    two sizes PROBE_GAP apart. The smallest allowed sizes from 1 until PER_PARITY of each
    parity are there (B = [1, 8]: 1 to 6; n = [8, 64]: 8 to 13; a step of 4 from 16: 16 to 36
    as far as the range goes), or three evenly spaced ones (`_spaced`) where the range holds
    fewer: a loop taken only at odd or even sizes, past a threshold or over the first elements
    (`range(min(B, 3))`) runs at three of them, which `growth` compares. Each is one more
    export per grade, so no more than that."""
    spaced = _spaced(span)
    if not spaced:
        return ()
    step = span.multiple_of
    start = span.first(1) or spaced[0]
    run = tuple(range(start, min(span.high, start + (2 * PER_PARITY - 1) * step) + 1, step))
    return run if len(run) >= PROBES else tuple(sorted({*run, *spaced}))


def probe_dims(spans: Mapping[str, DimRange], dim: str,
               names: Sequence[str]) -> list[dict[str, int]]:
    """The probe shapes' dimension values: `dim` at each of its probe sizes, every other named
    dimension at one allowed value (past the special-cased sizes if it can be). ValueError (a
    problem package error) when a dimension has no range or `dim`'s has no two probe sizes."""
    missing = sorted(n for n in {dim, *names} if n not in spans)
    if missing:
        raise ValueError(f"the growth check exports programs at probe shapes, which needs a "
                         f"range [low, high] in [constraints] for {missing}")
    sizes = probe_sizes(spans[dim])
    if not sizes:
        raise ValueError(f"the growth check needs two allowed sizes of {dim} at least "
                         f"{PROBE_GAP} apart, but {spans[dim].describe(dim)}")
    rest = {n: spans[n].pick(SPECIAL_BELOW) for n in names if n != dim}
    return [{**rest, dim: size} for size in sizes]


# -- what a program is made of -----------------------------------------------------------------

@dataclass
class Footprint:
    """A program's size once every call is inlined, and where its operations are."""

    ops: int = 0
    in_loops: int = 0  # operations inside while loops' regions
    whiles: int = 0
    copies: int = 0  # calls of a lax loop's body function (one per copy of the body)
    looped_copies: int = 0  # those inside while loops' regions
    calls: Counter[str] = field(default_factory=Counter)  # other callees -> calls
    # Operations that compute (not `_LAYOUT`), by name: an unrolled loop adds the same ones
    # per element, wherever the size changes how its slices and reshapes are lowered.
    kinds: Counter[str] = field(default_factory=Counter)
    moves: Counter[str] = field(default_factory=Counter)  # the `_LAYOUT` ones, by name

    def add(self, other: Footprint, in_loop: bool) -> None:
        self.ops += other.ops
        self.in_loops += other.ops if in_loop else other.in_loops
        self.whiles += other.whiles
        self.copies += other.copies
        self.looped_copies += other.copies if in_loop else other.looped_copies
        self.calls.update(other.calls)
        self.kinds.update(other.kinds)
        self.moves.update(other.moves)


def _entry(functions: dict[str, Op]) -> str:
    if "main" in functions:
        return "main"
    publics = [n for n, f in functions.items() if f.attrs.get("sym_visibility") == "public"]
    if len(publics) != 1:
        raise ParseError("the module has no main function")
    return publics[0]


def _callees(fn: Op) -> set[str]:
    found: set[str] = set()
    stack = [op for region in fn.regions for block in region for op in block.ops]
    while stack:
        op = stack.pop()
        if op.name == "func.call":
            found.add(op.attrs.get("callee", ""))
        stack.extend(o for region in op.regions for block in region for o in block.ops)
    return found


def footprint(module: Module, budget: Budget) -> Footprint:
    """The inlined program's footprint, computed per function (callees first), so a call
    repeated a million times costs one addition, not a million copies. ParseError on a call to
    an unknown function or recursion; TooComplex past the budget."""
    functions = module.functions()
    entry = _entry(functions)
    order: list[str] = []  # callees before callers
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[tuple[str, list[str]]] = []
    for root in (entry,):
        state[root] = 1
        path.append((root, sorted(_callees(functions[root]))))
        while path:
            name, todo = path[-1]
            if not todo:
                state[name] = 2
                order.append(name)
                path.pop()
                continue
            nxt = todo.pop()
            if nxt not in functions:
                raise ParseError(f"func.call to unknown function @{nxt}")
            if state.get(nxt) == 1:
                raise ParseError(f"recursive call to @{nxt}")
            if not state.get(nxt):
                state[nxt] = 1
                path.append((nxt, sorted(_callees(functions[nxt]))))
    done: dict[str, Footprint] = {}
    for name in order:
        fp = Footprint()
        stack = [(op, False) for region in functions[name].regions for block in region
                 for op in block.ops]
        while stack:
            op, in_loop = stack.pop()
            budget.spend()
            if op.name == "func.call":
                callee = op.attrs.get("callee", "")
                budget.spend(len(done[callee].calls) + len(done[callee].kinds)
                             + len(done[callee].moves))
                fp.add(done[callee], in_loop)
                if _LAX_BODY.match(callee):
                    fp.copies += 1
                    fp.looped_copies += in_loop
                else:
                    fp.calls[callee] += 1
                continue
            if op.name != "stablehlo.constant":  # constants merge when their values match
                fp.ops += 1
                fp.in_loops += in_loop
                (fp.moves if op.name in _LAYOUT else fp.kinds)[op.name] += 1
            inner = in_loop or op.name == "stablehlo.while"
            fp.whiles += op.name == "stablehlo.while"
            stack.extend((o, inner) for region in op.regions for block in region
                         for o in block.ops)
        done[name] = fp
    return done[entry]


# -- the rule ----------------------------------------------------------------------------------

def _cause(dim: str, lo: int, hi: int, steps: int, a: Footprint, b: Footprint,
           each: str) -> str:
    """What grows from the program at dim = lo to the one at dim = hi (`steps` more steps of
    per-step code apart, one per `each`), named from the programs alone: never a loop that is
    not there."""
    at = f"for {dim}={lo} and {dim}={hi}"
    if b.whiles - a.whiles >= steps:
        return (f"It holds {a.whiles} and {b.whiles} while loops {at}: a lax loop (scan, "
                f"fori_loop, while_loop or map) is started once per {each}, as when "
                f"a Python loop over {dim} calls one. Vectorize over {dim} (jax.vmap) and run "
                f"one loop for the whole batch.")
    if b.copies - a.copies >= steps:
        if b.whiles == 0:
            how = f"unrolled completely: unroll=True, or an unroll factor of at least {dim}"
        elif b.whiles == 1 and b.looped_copies > 1:
            how = (f"unroll={b.looped_copies} copies the body {b.looped_copies} times into "
                   f"each loop step, plus one copy per step left over")
        else:
            how = "unroll=k copies the body k times into each loop step"
        return (f"A lax loop (jax.lax.scan or fori_loop) is unrolled over {dim}: its body is "
                f"copied into the program {a.copies} and {b.copies} times {at} ({how}). Leave "
                f"unroll at its default (1) so that the loop stays a loop, or vectorize with "
                f"jax.vmap.")
    if b.whiles and 2 * (b.in_loops - a.in_loops) >= b.ops - a.ops:
        return (f"The body of a lax loop grows: {a.in_loops} and {b.in_loops} operations "
                f"inside while loops {at}, so something in it runs once per {each} "
                f"while JAX traces (a Python loop or comprehension over {dim}). Vectorize it "
                f"over {dim}.")
    grown = sorted((n for n in b.calls if b.calls[n] > a.calls.get(n, 0)),
                   key=lambda n: (a.calls.get(n, 0) - b.calls[n], n))[:3]
    calls = ", ".join(f"{n} is called {a.calls.get(n, 0)} and {b.calls[n]} times"
                      for n in grown)
    calls = f" ({calls} {at})" if calls else ""
    return (f"Operations are repeated for each {each}{calls}: code that runs once per "
            f"{each.split()[0]} while JAX traces (a Python loop or comprehension over {dim}, or "
            f"splitting an array into its {dim} rows) is unrolled into the program. Use "
            f"vectorized operations or jax.vmap over {dim}.")


def growth(parsed: Sequence[Parsed], dim: str,
           steps: Callable[[dict[str, int]], int] | None = None, each: str = "") -> RuleOutcome:
    """Whether the program stays the same size as `dim` grows, other dims equal, between the
    programs exported at the judge's probe shapes, and between the tests' own programs where
    three or more share every other dimension. `steps(dims)` is how many steps per-step code
    runs at those dimensions (default: dim's value; a loop over blocks of 4 passes `T // 4`,
    and `each` names one step: "step (T // 4 in all)"): it fails when the program grows by at
    least one operation per step over every interval between probe sizes.

    The probes fix every other dimension at one value, so code that unrolls only when another
    dimension differs from it (`if D != 3`) is seen only in the tests' programs: three test
    shapes with the same other dimensions are compared as the probes are, two only when far
    apart (`TWO_SIZES_APART`), since a special case of some size makes two differ."""
    if all(dim in item.program.symbolic for item in parsed):
        return RuleOutcome(True, f"One program serves every {dim}: it was exported with {dim} "
                                 f"symbolic, so it does not grow with {dim}.",
                           region=noted(parsed[0].program, f"{dim} is symbolic in this program"))
    count = steps or (lambda dims: dims[dim])
    groups = _Groups()
    budget = Budget()  # every program of the grade: bounded together
    for item in parsed:
        p = item.program
        if not p.probe and dim not in p.dims:
            continue
        if dim not in p.dims:
            return RuleOutcome(False, f"The program for input shapes {p.signature} has no "
                                      f"value for {dim}, so its growth cannot be checked.")
        try:
            fp = footprint(item.module, budget)
        except (ParseError, TooComplex) as exc:
            if not p.probe:
                continue  # a test's program: the program rules judge it
            return RuleOutcome(False, f"The exported program for input shapes {p.signature} "
                                      f"could not be analyzed ({exc}).")
        rest = tuple(sorted((k, v) for k, v in p.dims.items() if k != dim))
        if p.probe:
            groups.probes.setdefault(rest, {})[p.dims[dim]] = (fp, item)
        groups.every.setdefault(rest, {}).setdefault(p.dims[dim], (fp, item))
    compared: list[str] = []
    shown: Region | None = None
    for rest, sizes in groups.probes.items():
        if len(sizes) < 2:
            continue
        verdict = _compare(dim, rest, sizes, count, each)
        if isinstance(verdict, RuleOutcome):
            return verdict
        compared.append(verdict[0])
        shown = shown or verdict[1]
    if not compared:
        return RuleOutcome(False, f"No programs exported at two probe sizes of {dim} were "
                                  f"available, so growth with {dim} cannot be checked.")
    for rest, sizes in groups.every.items():
        if rest in groups.probes and sizes == groups.probes[rest]:
            continue
        if len(sizes) < PROBES:
            # Two sizes: only far apart and past the special-cased ones, where a structure
            # that changes at some size adds far fewer operations than the steps did.
            lo, hi = sorted(sizes)[0], sorted(sizes)[-1]
            gap = count(sizes[hi][1].program.dims) - count(sizes[lo][1].program.dims)
            if len(sizes) < 2 or lo < SPECIAL_BELOW or gap < TWO_SIZES_APART:
                continue
        verdict = _compare(dim, rest, sizes, count, each, "tested")
        if isinstance(verdict, RuleOutcome):
            return dataclasses.replace(verdict, message=(
                f"{verdict.message} These are the tests' own programs; at the probe shapes, "
                f"{'; '.join(compared)}."))
    return RuleOutcome(True, f"The program does not grow with {dim}: {'; '.join(compared)}.",
                       region=shown)


@dataclass
class _Groups:
    """Programs by the values of every dimension but the one measured, then by its value."""

    probes: dict[tuple[tuple[str, int], ...], dict[int, tuple[Footprint, Parsed]]] = field(
        default_factory=dict)
    every: dict[tuple[tuple[str, int], ...], dict[int, tuple[Footprint, Parsed]]] = field(
        default_factory=dict)


def _compare(dim: str, rest: tuple[tuple[str, int], ...],
             sizes: dict[int, tuple[Footprint, Parsed]], count: Callable[[dict[str, int]], int],
             each: str, kind: str = "probe") -> RuleOutcome | tuple[str, Region | None]:
    """One group's programs: a failed outcome when they grow per step, else what was compared
    and the region to show."""
    values = sorted(sizes)
    fps = [sizes[v][0] for v in values]
    runs = [count(sizes[v][1].program.dims) for v in values]
    others = ", ".join(f"{k}={v}" for k, v in rest)
    where = f" ({others})" if others else ""
    counts = listed([str(fp.ops) for fp in fps])
    at = f"{dim}={listed([str(v) for v in values])}"
    note = "; ".join(f"{dim}={v}: {fp.ops} ops" for v, fp in zip(values, fps, strict=True))
    note += " once inlined (constants aside)"
    # An unrolled loop adds at least one op per step, at every size: growing by fewer ops
    # than the steps did, or over only some of the intervals, is not per-step code. Taken
    # only at some sizes (odd ones, multiples of 3, past a threshold, the first few), it
    # still grows per step over three of them (`_per_step`).
    picked = _per_step(values, fps, runs)
    if picked is None:
        return f"{counts} operations for {at}{where}", noted(sizes[values[-1]][1].program, note)
    vs = [values[i] for i in picked]
    fs = [fps[i] for i in picked]
    rs = [runs[i] for i in picked]
    only = "" if len(picked) == len(values) else (
        f" Not every {kind} size grows ({note}): code that runs once per element only "
        f"at some sizes of {dim} (a branch on its parity, on its size, or over its "
        f"first elements) is still per-element code.")
    return RuleOutcome(False, (
        f"Your program grows with {dim}: {listed([str(fp.ops) for fp in fs])} operations for "
        f"{dim}={listed([str(v) for v in vs])}{where}. "
        + _cause(dim, vs[0], vs[-1], max(1, rs[-1] - rs[0]), fs[0], fs[-1],
                 each or f"element of {dim}") + only),
        region=_grown(sizes[vs[0]][1], sizes[vs[-1]][1], note))


def _grows(a: Footprint, b: Footprint, n: int, m: int) -> bool:
    """From the program run n steps to the one run m steps: at least one op more per step."""
    return b.ops - a.ops >= max(1, m - n)


def _in_proportion(a: Footprint, b: Footprint, c: Footprint, m: int, n: int) -> bool:
    """From a to b (m steps) and from b to c (n steps), the same operations that compute were
    added per step, at least one of them; or, when none that computes was, the same ones that
    move values (a Python loop slicing rows out one by one for a lax loop to read)."""
    def same(x: Counter[str], y: Counter[str], z: Counter[str]) -> bool | None:
        names = set(x) | set(y) | set(z)
        first = {k: y[k] - x[k] for k in names}
        second = {k: z[k] - y[k] for k in names}
        if not any(first.values()) and not any(second.values()):
            return None
        return all(first[k] * n == second[k] * m for k in names) and any(first.values())

    computes = same(a.kinds, b.kinds, c.kinds)
    return computes if computes is not None else bool(same(a.moves, b.moves, c.moves))


def _per_step(values: Sequence[int], fps: Sequence[Footprint],
              runs: Sequence[int]) -> list[int] | None:
    """The probe programs (indices, sizes increasing) over which the program grows per step:
    all of them when it grows over every interval; else three evenly spaced sizes over which it
    does, PROBE_GAP apart or a multiple of it and none of them a special-case-prone size below
    SPECIAL_BELOW (a loop at even sizes only: 4, 6 and 8), or three sizes over which it adds
    the same operations that compute per step (`_in_proportion`: a loop past a threshold, or
    over `range(min(B, 3))`; an unrolled loop adds the same ones per element, which a
    structure that changes at some size, such as a special case of B = 1, does not do twice).
    None when there are none."""
    n = len(fps)
    if all(_grows(fps[i], fps[i + 1], runs[i], runs[i + 1]) for i in range(n - 1)):
        return list(range(n))
    evenly: list[int] | None = None
    # A lax loop with unroll=2 or 3 (its body copied that many times inside a while loop at
    # the largest size) is unrolled completely at sizes up to it, and copies the remainder
    # past it: growth in copies of its body is not per-element code there. A factor of 4 or
    # more (the tests' "partly unrolled") is. Two such loops (a scan for the gradients, one
    # for the clipping) copy their bodies up to that many times each.
    unrolled = 0 < fps[-1].looped_copies <= PROBES * max(fps[-1].whiles, 1)
    for i in range(n):
        for j in range(i + 1, n):
            if runs[j] <= runs[i] or not _grows(fps[i], fps[j], runs[i], runs[j]):
                continue
            for k in range(j + 1, n):
                if runs[k] <= runs[j] or not _grows(fps[j], fps[k], runs[j], runs[k]):
                    continue
                if unrolled and fps[k].copies - fps[i].copies >= runs[k] - runs[i]:
                    continue  # copies of a lax loop's body below its unroll factor
                if (evenly is None and values[i] >= SPECIAL_BELOW
                        and (values[j] - values[i]) % PROBE_GAP == 0
                        and runs[j] - runs[i] == runs[k] - runs[j]):
                    evenly = [i, j, k]
                if _in_proportion(fps[i], fps[j], fps[k], runs[j] - runs[i], runs[k] - runs[j]):
                    return [i, j, k]
    return evenly


def _grown(lo: Parsed, hi: Parsed, note: str) -> Region | None:
    """The ops of the kind that multiplied most from the smaller program to the larger one."""
    def census(item: Parsed) -> dict[str, list[Op]]:
        found: dict[str, list[Op]] = {}
        for _, op in all_ops(item.module):
            found.setdefault(op.name, []).append(op)
        return found

    small, large = census(lo), census(hi)
    name = max(large, key=lambda k: (len(large[k]) - len(small.get(k, [])), k), default=None)
    if name is None:
        return noted(hi.program, note)
    note += f"; {name}: {len(small.get(name, []))} -> {len(large[name])}"
    return region_of(hi.module, large[name], hi.program, depth=0, note=note)


@register("independent_of_dim", "program", DimOptions, probe="dim")
def check_independent_of_dim(programs: Sequence[ProgramInfo], *, dim: str) -> RuleOutcome:
    """The program does not grow with the dimension, compared at probe sizes the judge chooses.

    Passes when the program was exported with `dim` symbolic (one program serves every size),
    or when the programs exported at the judge's probe shapes do not grow with `dim`: `dim` at
    three sizes of each parity from the smallest (`B = [1, 8]`: 1 to 6; see `probe_sizes`),
    every other dimension at one value (see `probe_dims`); the rule fails when the program
    (calls inlined, constants not counted) grows by at least as many operations as `dim` grew
    from each probe size to the next, or over three probe sizes: evenly spaced ones of one
    parity from 3, or any three by the same operations per element. Per-element code unrolled
    while JAX traces (Python loops and comprehensions, also when taken only at odd or even
    sizes, past a threshold or over the first few elements; lax loops with `unroll=True` or a
    factor of 4 or more, splitting into rows) fails, with a message naming what grows; a
    structure that changes at some size (a special case, a parity branch without a loop)
    passes. The tests' own programs are compared too where three share the other dimensions.

    When stage B observed the tests' programs run (jaxjudge.analysis.observed), arithmetic written
    once per index along `dim` fails too, at whatever shapes it is taken: a loop keyed to a
    shape no probe has is seen where it runs."""
    parsed = parse_programs(programs)
    if isinstance(parsed, Unreadable):
        return RuleOutcome(False, parsed.message)
    outcome = growth(parsed, dim)
    if not outcome.passed:
        return outcome
    for item in parsed:
        why = written_per_index(item.program.observed, dim)
        if why is not None:
            return RuleOutcome(False, f"{why}. Vectorize over {dim} (jax.vmap or batched "
                                      f"operations) or use a rolled lax loop.",
                               region=noted(item.program, f"code written once per {dim} index"))
    return outcome
