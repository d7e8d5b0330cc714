"""Which results of a loop only move an argument's values.

A loop that copies an input row by row into a buffer (`fori_loop` with `dynamic_slice` and
`dynamic_update_slice`) does no arithmetic on the input's values: each element of its result is
an element of the input or a constant, as with `jnp.pad`. Deciding that from the loop's meaning,
not its spelling: follow which argument's values each value holds (its *taint*) through the
loop's body, callees included, until the carried values stop gaining any. The loop moves values
when every op that reads a tainted value only moves values (the ops in `moves`), reads it where
it moves it (never as an index, a predicate or a size), and the loop's condition reads none.
Arithmetic on counters and indices (values that hold no argument's values) is free.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

from jaxjudge.analysis.dataflow import scatter_update
from jaxjudge.analysis.stablehlo import Op, ParseError

CONST = -1  # an operand computed from no argument
OTHER = -2  # an operand computed from an argument (not a copy): the loop mixes data
_RETURNS = frozenset({"func.return", "stablehlo.return", "mhlo.return"})
MAX_CALL_DEPTH = 32
# Operand positions that carry values (the rest are indices, predicates or sizes).
_DATA_AT: dict[str, tuple[int, ...]] = {
    "stablehlo.dynamic_slice": (0,),
    "stablehlo.real_dynamic_slice": (0,),
    "stablehlo.dynamic_update_slice": (0, 1),
    "stablehlo.gather": (0,),
    "stablehlo.dynamic_gather": (0,),
    "stablehlo.dynamic_reshape": (0,),
    "stablehlo.dynamic_broadcast_in_dim": (0,),
    "stablehlo.dynamic_pad": (0, 1),
    "stablehlo.select": (1, 2),
}


class _Mixes(Exception):
    """The loop computes on a tainted value (or reads one where it steers)."""


Taint = frozenset[int]


class _Walk:
    """What one loop's walk needs: the program's functions, the ops that move values, the
    budget, and the kind of each value defined around the loop (its regions read them by
    name)."""

    def __init__(self, functions: dict[str, Op], moves: Collection[str],
                 spend: Callable[[], None], around: Callable[[str], int | None]) -> None:
        self.functions, self.moves, self.spend, self.around = functions, moves, spend, around


def loop_copies(op: Op, kinds: list[int], functions: dict[str, Op], moves: Collection[str],
                spend: Callable[[], None],
                around: Callable[[str], int | None]) -> list[int | None] | None:
    """Per result of the `stablehlo.while` `op`, the argument whose values it holds (None: it
    holds none, computed from constants alone), or None when the loop does more than move
    values. kinds: per operand, the argument it is a copy of, CONST or OTHER; around: the
    same for a value defined before the loop (None: not defined). moves: the op names that
    move values without arithmetic. spend: called per op visited (the caller's budget; it
    raises past it)."""
    if OTHER in kinds or len(op.regions) != 2 or len(kinds) != len(op.results):
        return None
    carried: list[Taint] = [frozenset() if k == CONST else frozenset({k}) for k in kinds]
    cond, body = op.regions
    walk = _Walk(functions, moves, spend, around)
    try:
        for _ in range(len(carried) + 1):
            returned = _region(body, carried, walk, 0)
            if len(returned) != len(carried):
                return None
            grown = [a | b for a, b in zip(carried, returned, strict=True)]
            if grown == carried:
                break
            carried = grown
        if any(_region(cond, carried, walk, 0)):
            return None  # the trip count depends on the data
    except (_Mixes, ParseError):
        return None
    if any(len(t) > 1 for t in carried):
        return None  # two arguments' values mixed in one buffer: not a copy of one
    return [next(iter(t)) if t else None for t in carried]


def _region(region: list, args: list[Taint], walk: _Walk, depth: int,
            outer: dict[str, Taint] | None = None, clean: bool = False) -> list[Taint]:
    """What the region's return reads (per operand), its first block's arguments tainted as
    `args`; `outer`: the values of the enclosing regions it may read by name (a callee's body:
    none); clean: reading any tainted value is computation we do not follow (a region nested
    in the loop's body: its results are not followed)."""
    if not region:
        return []
    env: dict[str, Taint] = dict(outer or {})
    env.update(zip(region[0].args, args, strict=False))
    returned: list[Taint] = []
    for block in region:
        for o in block.ops:
            walk.spend()
            if o.name in _RETURNS:
                returned = [_read(env, name, walk, outer is not None or depth == 0)
                            for name in o.operands]
                continue
            results = _op(o, env, walk, depth, outer is not None or depth == 0, clean)
            env.update(zip(o.results, results, strict=False))
    return returned


def _read(env: dict[str, Taint], name: str, walk: _Walk, scoped: bool) -> Taint:
    """A value's taint: the region's own, or (scoped: a region of the loop, not a callee's
    body) one defined before the loop."""
    if name in env:
        return env[name]
    kind = walk.around(name) if scoped else None
    if kind is None:
        raise ParseError(f"the loop reads {name}, which is not defined before it")
    if kind == OTHER:
        raise _Mixes
    return frozenset() if kind == CONST else frozenset({kind})


def _op(o: Op, env: dict[str, Taint], walk: _Walk, depth: int, scoped: bool,
        clean: bool) -> Iterable[Taint]:
    ins = [_read(env, name, walk, scoped) for name in o.operands]
    tainted = [k for k, t in enumerate(ins) if t]
    if clean and tainted:
        raise _Mixes
    if o.name == "func.call":
        callee = walk.functions.get(o.attrs.get("callee", ""))
        if callee is None or not callee.regions or depth >= MAX_CALL_DEPTH:
            raise _Mixes
        return _region(callee.regions[0], ins, walk, depth + 1, clean=clean)
    if o.name == "stablehlo.scatter" and len(o.operands) == 3 and scatter_update(o) == "set":
        # `.at[t].set(row)` (and vmap's dynamic_update_slice): the update replaces the
        # buffer's elements, its region returns the update alone; indices at operand 1
        if o.name not in walk.moves or 1 in tainted:
            raise _Mixes
        return [frozenset().union(*(ins[k] for k in tainted))] * len(o.results)
    if o.regions:
        # A nested op with regions (a loop, a branch) may read the enclosing values by name:
        # any taint passed to it or read inside it is computation we do not follow.
        if tainted:
            raise _Mixes
        for region in o.regions:
            _region(region, [frozenset()] * len(region[0].args) if region else [], walk,
                    depth, outer=env, clean=True)
        return [frozenset()] * len(o.results)
    if not tainted:
        return [frozenset()] * len(o.results)
    data = _DATA_AT.get(o.name)
    if o.name not in walk.moves or (data is not None and any(k not in data for k in tainted)):
        raise _Mixes
    held = frozenset().union(*(ins[k] for k in tainted))
    return [held] * len(o.results)
