"""Loop analysis for `loop_over_dim`: how many steps each while loop runs, and what it carries.

Every `scan`, `fori_loop`, `while_loop` and `map` becomes a `stablehlo.while`; JAX 0.4.38 and
0.10 lower them a little differently (the body inline or through `func.call`, a bound that is an
array carried through the loop, index arithmetic before or after a `convert`), so nothing here
matches a lowering: it reads the inlined dataflow (`jaxjudge.analysis.dataflow`).

- **Constants** are folded over the whole inlined program (`jaxjudge.analysis.folding`): a value
  multiplied by zero, or left out by a `where` on a constant, depends on nothing.
- **Trip count**: worked out from the loop's counter (`jaxjudge.analysis.tripcount`).
- **Does the work**: a carried value (not the counter, not a value passed along unchanged) is
  computed in one pass of the body from its own previous value and from the named arguments
  (through the loop's other values: its inputs, or other carried values that are), and the
  loop's final value of it reaches the program's outputs through a dependence that no constant
  folding cuts.
- **All of the work** (`only_through_loop`, with arguments named): the outputs depend on them
  only through the carried state of the loops that do the work: with those loops' carried
  results cut, no output depends on them. A closed form beside a token loop, or passed
  through the loop unchanged, fails; so does a row of the input copied into the output beside
  the loop.
- **At every step** (`every_step`): the update runs at every step but one (a first step
  that only sets the starting value). The gates a step decides on its own progress (the
  counter, a flag carried beside it) are run step by step (`jaxjudge.analysis.stepgates`), so an
  update run at half of the steps, or at one of them, and the carried value passed along at
  the others, is counted step by step. Without it, how the work is spread over the steps is
  not checked.

All work is counted against the grade's `Budget` (one for all of a grade's programs), like the
other program-level rules: a program built to be slow fails the rule instead of stalling it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jaxjudge.analysis.dataflow import Graph, Kind, Loop, Step, TooComplex, propagate
from jaxjudge.analysis.folding import (
    Bits,
    Transfer,
    Value,
    fold_constants,
    live_nodes,
    make_transfer,
)
from jaxjudge.analysis.stablehlo import tensor_types
from jaxjudge.analysis.stepgates import branch_transfer, control_groups
from jaxjudge.analysis.stepslices import reads_whole, whole_reads
from jaxjudge.analysis.tripcount import counter_step, origin, trip_count

MAX_LOOP_PASSES = 32  # passes over one loop's steps until its carried bits settle (nesting depth)
MAX_NAMES = 16  # arguments a carried value must depend on
# Steps at which a loop with `every_step` may leave its update out: a first step that only sets
# the starting value (`jnp.where(t == 0, x[0], update)`).
MAX_IDLE_STEPS = 1


# -- what a loop carries ----------------------------------------------------------------------

@dataclass
class LoopFinding:
    """One while loop of the inlined program: its trip count (None: not proven) and whether it
    carries the work (`works`), else `why` (for messages: "counts", "not_live", "no_data")."""

    count: int | None
    works: bool = False
    why: str = ""
    idle: int = 0  # with every_step: the most steps at which the update is left out


class _Local:
    """Bit sets of one loop's steps, falling back to the whole program's for values the loop
    reads from outside."""

    def __init__(self, outside: list[int], seeds: dict[int, int], owned: set[int]) -> None:
        self.outside, self.bits, self.owned = outside, dict(seeds), owned

    def __getitem__(self, n: int) -> int:
        if n in self.owned:
            return self.bits.get(n, 0)
        return self.outside[n]


# Steps that compute (combine values arithmetically), as opposed to moving them around.
_COMPUTES = frozenset({Kind.ADD, Kind.NEGATE, Kind.MULTIPLY, Kind.DIVIDE, Kind.CONTRACT,
                       Kind.REDUCE, Kind.OTHER})


def _settle(g: Graph, loop: Loop, local: _Local, transfer: Transfer) -> None:
    """Propagate over the loop's steps until nothing changes (nested loops need passes)."""
    for _ in range(MAX_LOOP_PASSES):
        changed = False
        for i in range(loop.first, loop.end):
            step = g.steps[i]
            g.budget.spend(max(1, len(step.operands)))
            out = transfer(step, local)
            if out is None:
                continue
            for r, b in zip(step.results, out, strict=False):
                old = local.bits.get(r, 0)
                if b and (old | b) != old:
                    local.bits[r] = old | b
                    changed = True
        if not changed:
            return
    raise TooComplex("a loop's carried values did not settle")


def _state(g: Graph, values: list[Value], loop: Loop) -> tuple[list[bool], list[int]]:
    """(per position: passed along unchanged; the positions of the carried state, neither
    passed along unchanged nor a counter `c + 1`)."""
    unchanged = [all(p < len(ret) and origin(g, ret[p]) == a for ret in loop.body_returns)
                 for p, a in enumerate(loop.body_args)]
    carried = [p for p in range(len(loop.body_args)) if not unchanged[p] and {
        counter_step(g, values, loop, ret, p) for ret in loop.body_returns} == {None}]
    return unchanged, carried


def _carries_work(g: Graph, values: list[Value], loop: Loop, n: int, data: list[int],
                  n_names: int, live: set[int], exact: list[Value] | None = None
                  ) -> tuple[bool, str, int]:
    """Whether the loop computes, at some step of its body, a value from its own previous
    value of some carried state and from the named arguments (bits 0..n_names-1 of `data`),
    and that computed value reaches the program's outputs through what the loop returns.
    With `exact` (the program folded exactly: `every_step`), it must be computed at every
    step but MAX_IDLE_STEPS (why "skipped":
    not so; the third value is then the fewest steps left out, see
    `jaxjudge.analysis.stepgates`)."""
    if not loop.body_args or not loop.body_returns or loop.end < loop.first:
        return False, "counts", 0
    unchanged, carried = _state(g, values, loop)
    if not carried:
        return False, "counts", 0
    k = len(carried)
    names_mask = (1 << n_names) - 1
    bit = {p: 1 << (n_names + j) for j, p in enumerate(carried)}
    seeds: dict[int, int] = {}
    arg_sizes = {t.elements() for text in g.main_arg_types for t in tensor_types(text)[:1]}
    arg_sizes.discard(None)
    arg_sizes.discard(1)  # a scalar argument's size is any scalar's
    for heads in (loop.body_args, loop.cond_args):
        for p, a in enumerate(heads):
            # Values passed along unchanged (the scanned arrays, closed-over inputs) are what
            # the loop started with; a counter depends on nothing. A carried value that starts
            # as a whole argument's worth of its data (an output buffer updated in place from
            # x, alpha * x, x.T) holds that argument's data too; one that starts from a part
            # of it (x[0]) does not, so `c * 1.0` on it is no work. Work done on it before the
            # loop is the observer's to see (shares entering the loop already mixed).
            if p in bit:
                start = loop.operands[p] if p < len(loop.operands) else None
                whole = (start is not None and p < len(loop.sizes)
                         and loop.sizes[p] in arg_sizes)
                seeds[a] = bit[p] | (data[start] & names_mask if whole else 0)
            else:
                seeds[a] = data[a] & names_mask if p < len(unchanged) and unchanged[p] else 0
    owned = set(seeds)
    for i in range(loop.first, loop.end):
        owned.update(g.steps[i].results)
    g.budget.spend(loop.end - loop.first)
    base = make_transfer(values)

    def returned(local: _Local, p: int) -> int:
        acc = 0
        for ret in loop.body_returns:
            acc |= local[ret[p]] if p < len(ret) else 0
        return acc

    # 1. What each carried value is computed from in one step; the arguments reaching a carried
    #    value directly or through other carried values (the running max feeding the sum).
    first = _Local(data, seeds, owned)
    _settle(g, loop, first, base)
    direct = {p: returned(first, p) for p in carried}
    reach = {p: direct[p] & names_mask for p in carried}
    for _ in range(k + 1):
        g.budget.spend(k)
        grew = False
        for p in carried:
            extra = 0
            for q in carried:
                if q != p and direct[p] & bit[q]:
                    extra |= reach[q]
            if extra & ~reach[p]:
                reach[p] |= extra
                grew = True
        if not grew:
            break

    # 2. A step that computes from a carried value and from the arguments (directly, or from
    #    another carried value they reach) marks its result: the recurrence at work.
    mixed_shift = n_names + k

    def mixing_for(base: Transfer) -> Transfer:
        def mixing(step: Step, bits: Bits) -> list[int] | None:
            out = base(step, bits)
            if out is None or step.kind not in _COMPUTES:
                return out
            union = out[0]
            mark = 0
            for j, p in enumerate(carried):
                if not union & bit[p]:
                    continue
                names = union & names_mask
                for q in carried:
                    if q != p and union & bit[q]:
                        names |= reach[q]
                if names == names_mask:
                    mark |= 1 << (mixed_shift + j)
            return [b | mark for b in out] if mark else out

        return mixing

    # What the recurrence computed also comes back around the loop (a scan's `ys` recording
    # the previous carry): its marks follow the back edges until they settle.
    mixed_mask = ((1 << k) - 1) << mixed_shift

    def marked(local: _Local, transfer: Transfer) -> _Local:
        for _ in range(k + 1):
            _settle(g, loop, local, transfer)
            grew = False
            for p in carried:
                back = returned(local, p) & mixed_mask
                for heads in (loop.body_args, loop.cond_args):
                    if p < len(heads) and back & ~local.bits.get(heads[p], 0):
                        local.bits[heads[p]] = local.bits.get(heads[p], 0) | back
                        grew = True
            if not grew:
                break
        return local

    second = marked(_Local(data, seeds, owned), mixing_for(base))
    idle: dict[int, int] = {}
    if exact is not None:
        free = _data_free(carried, direct, bit, names_mask)
        groups, control = control_groups(g, exact, loop, n)
        gate = 1 << (mixed_shift + k)
        # Every control value carries the gate: where it is known at these steps the branch
        # taken is read, and where a gate also reads data (or cannot be run) conservatively.
        gates = [p for p in range(len(loop.body_args)) if p in control or p in free or (
            p not in bit and not (p < len(unchanged) and unchanged[p]))]
        quiet = 0
        for p in free:
            quiet |= bit[p]
        for group in groups:
            local = _Local(data, seeds, owned)
            for heads in (loop.body_args, loop.cond_args):
                for p in gates:
                    if p < len(heads):
                        local.bits[heads[p]] = local.bits.get(heads[p], 0) | gate
            # Marks come back around only from steps like these: a step of a group that
            # passes the value along does not inherit the work of the steps before it.
            marked(local, branch_transfer(g, loop, group.values, gate, quiet,
                                          mixing_for(make_transfer(group.values))))
            for p in carried:
                if not returned(local, p) & mixed_mask:
                    idle[p] = idle.get(p, 0) + group.steps
    why = "no_data" if any(direct[p] & bit[p] for p in carried) else "counts"
    fewest = n
    for p in carried:
        if returned(second, p) >> mixed_shift:
            if p >= len(loop.results) or loop.results[p] not in live:
                why = why if why == "skipped" else "not_live"
            elif idle.get(p, 0) <= MAX_IDLE_STEPS:
                return True, "", 0
            else:
                why, fewest = "skipped", min(fewest, idle[p])
    return False, why, fewest if why == "skipped" else 0


def _data_free(carried: list[int], direct: dict[int, int], bit: dict[int, int],
               names_mask: int) -> set[int]:
    """Carried positions computed from no argument, even through other carried values (a
    flag, a step counter kept as a float)."""
    free = {p for p in carried if not direct[p] & names_mask}
    while True:
        out = {p for p in free if any(direct[p] & bit[q] for q in carried if q not in free)}
        if not out:
            return free
        free -= out


def _seeds(g: Graph, arg_paths: Sequence[str], names: Sequence[str]) -> dict[int, int]:
    """One bit per name on the arguments it names; without names, one bit for every argument."""
    if len(names) > MAX_NAMES:
        raise TooComplex(f"more than {MAX_NAMES} arguments to track")
    seeds: dict[int, int] = {}
    for node, path in zip(g.main_args, arg_paths, strict=False):
        for i, name in enumerate(names):
            if path == name or path.startswith(name + "."):
                seeds[node] = seeds.get(node, 0) | (1 << i)
        if not names:
            seeds[node] = 1
    return seeds


def analyze_loops(g: Graph, arg_paths: Sequence[str], depends_on: Sequence[str],
                  want: int | None = None,
                  only_through_loop: bool | Sequence[str] = False,
                  sliced: Sequence[str] = (), text: str = "",
                  every_step: bool = False) -> list[LoopFinding]:
    """Every while loop of the program, in program order, with its trip count; whether it
    carries the work is worked out for the loops that run `want` steps (all if None). With
    `only_through_loop`, a loop that does the work but beside which the named arguments (or
    the ones it lists: a start vector) also reach the outputs does not count (why: "bypass").
    With `sliced` (and `want`), no loop counts when the outputs are computed from those
    arguments other than through one step's slice at a time (why: "unsliced"; see
    `jaxjudge.analysis.stepslices`, which reads slices' bounds from the program's `text`).
    With `every_step`, the update must run at every step, not under a branch on the counter
    that passes the value along at other steps (why: "skipped")."""
    values = fold_constants(g)
    names = list(depends_on)
    seeds = _seeds(g, arg_paths, names)
    findings: list[LoopFinding] = []
    data: list[int] | None = None
    live: set[int] | None = None
    exact: list[Value] | None = None
    for loop in g.loops:
        counted = trip_count(g, values, loop)
        if counted is None:
            findings.append(LoopFinding(None, why="unknown"))
            continue
        n, _ = counted
        finding = LoopFinding(n)
        if want is None or n == want:
            if data is None:
                data = propagate(g, seeds, make_transfer(values))
                live = live_nodes(g, values, g.main_results)
                exact = fold_constants(g, exact=True) if every_step else None
            assert live is not None
            finding.works, finding.why, finding.idle = _carries_work(
                g, values, loop, n, data, max(1, len(names)), live, exact)
        findings.append(finding)
    working = [loop for loop, f in zip(g.loops, findings, strict=True) if f.works]
    if isinstance(only_through_loop, bool):
        through = seeds if only_through_loop and names else {}
    else:
        through = _seeds(g, arg_paths, list(only_through_loop)) if only_through_loop else {}
    if through and working and _bypassed(g, values, through, working):
        for f in findings:
            if f.works:
                f.works, f.why = False, "bypass"
    if sliced and want and any(f.works for f in findings) and reads_whole(
            whole_reads(g, values, arg_paths, sliced, want, text), g.main_results):
        for f in findings:
            if f.works:
                f.works, f.why = False, "unsliced"
    return findings


def _carried(g: Graph, values: list[Value], working: list[Loop]) -> list[tuple[Loop, list[int]]]:
    """Each loop with the positions of its carried state (not its counters, nor values passed
    along unchanged)."""
    return [(loop, _state(g, values, loop)[1]) for loop in working]


def _bypassed(g: Graph, values: list[Value], seeds: dict[int, int], working: list[Loop]) -> bool:
    """Whether some output depends on a named argument other than through the carried state of
    the loops that do the work: computed beside them (a closed form plus a token loop), or
    passed through one of them unchanged. Their carried results are cut, the names propagated."""
    cut = {loop.results[p] for loop, carried in _carried(g, values, working) for p in carried
           if p < len(loop.results)}
    base = make_transfer(values)

    def transfer(step: Step, bits: Bits) -> list[int] | None:
        out = base(step, bits)
        if out is None or cut.isdisjoint(step.results):
            return out
        return [0 if r in cut else b for r, b in zip(step.results, out, strict=False)]

    bits = propagate(g, seeds, transfer)
    return any(bits[r] for r in g.main_results)
