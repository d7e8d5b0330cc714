"""The dataflow skeleton of an exported program, for the program-level rules.

A parsed StableHLO module (generic form) becomes a flat list of `Step`s over integer value
nodes: every `func.call` is inlined per call site (a helper called twice is two copies, so its
call sites are not conflated), loops and conditionals become explicit links between the values
they carry. Rules then ask set questions ("which values does this value reach?") by propagating
bit sets over the steps, a few linear passes each; loop back edges need another pass, so the
number of passes is capped and a program that does not settle is refused, never analysed
without bound.

Edges come in kinds, because "the same values" (a reshape of x is still x) differ from "computed
from" (a matmul of x is not x, but depends on it):

- PASS: result i is operand i (or operand 0, or every operand): same values, re-laid-out.
- LINEAR: elementwise linear steps (add, subtract, negate, multiply or divide by a value that
  does not depend on the tracked one): the tracked values survive, scaled or shifted.
- everything else: dependence only.

A value depends on an argument only through the argument's data, never through its shape: with
symbolic dimensions the program computes sizes from its arguments (`get_dimension_size`, fed
to `dynamic_broadcast_in_dim`, `dynamic_reshape`, `dynamic_iota` and `shape_assertion`), and
`a_scale[:, None]` broadcast to `a`'s row count is not computed from `a`. So a step that reads
only its operands' shapes (`_SIZE_ONLY`) is inlined without operands: it, and every size or
shape operand built from it and from constants, carries no dependence, and a rule reaches the
same verdict whether the program was exported with symbolic or with concrete shapes (where
those sizes are constants). A shape operand computed from data would keep its dependence, but
no program that runs has one (stage B refines every shape to a constant).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import IntEnum

from jaxjudge.analysis.stablehlo import Block, Module, Op, ParseError, tensor_types

MAX_INLINED_STEPS = 300_000
# Step evaluations per grade, over all of its programs and propagations: honest programs need
# a few thousand per program (~10 ms); a program built to be slow stops here (~5 s).
MAX_WORK = 3_000_000

# Ops whose result *is* operand 0 (re-laid-out, re-typed or re-rounded but the same values).
_PASS_OPERAND0 = frozenset(
    {
        "stablehlo.convert",
        "stablehlo.reshape",
        "stablehlo.dynamic_reshape",
        "stablehlo.transpose",
        "stablehlo.broadcast_in_dim",
        "stablehlo.dynamic_broadcast_in_dim",
        "stablehlo.broadcast",
        "stablehlo.copy",
        "stablehlo.reduce_precision",
        "stablehlo.slice",
        "stablehlo.dynamic_slice",
        "stablehlo.real_dynamic_slice",
        "stablehlo.gather",
        "stablehlo.dynamic_gather",
        "stablehlo.reverse",
        "stablehlo.bitcast_convert",
        "stablehlo.pad",
        "stablehlo.dynamic_pad",
        "mhlo.copy",
    }
)
# Every result holds values of every operand (concatenation, stacking, padding values).
_PASS_ALL = frozenset({"stablehlo.concatenate"})
# Result holds operands 0 and 1 (stacking a loop's values into a buffer).
_PASS_01 = frozenset({"stablehlo.dynamic_update_slice"})
# Result holds operands 1 and 2 (select's two branches; operand 0 is the predicate).
_PASS_12 = frozenset({"stablehlo.select"})
# Result i is operand i.
_PASS_TUPLE = frozenset({"stablehlo.optimization_barrier"})
_ADD = frozenset({"stablehlo.add", "stablehlo.subtract"})
_NEGATE = frozenset({"stablehlo.negate"})
_MULTIPLY = frozenset({"stablehlo.multiply"})
_DIVIDE = frozenset({"stablehlo.divide"})
_CONTRACT = frozenset({"stablehlo.dot_general", "stablehlo.dot", "stablehlo.convolution"})
_REDUCE = frozenset({"stablehlo.reduce"})
_SCATTER = "stablehlo.scatter"
# Steps whose result is a size read from their operands' types, not from their values.
_SIZE_ONLY = frozenset({"stablehlo.get_dimension_size"})
_RETURNS = frozenset({"func.return", "stablehlo.return", "mhlo.return"})
_CONDITIONALS = frozenset({"stablehlo.case", "stablehlo.if"})


class Kind(IntEnum):
    """How a step's operands relate to its results (see the module docstring)."""

    PASS0 = 1  # result = operand 0
    PASS_ALL = 2  # result = every operand
    PASS_01 = 3
    PASS_12 = 4
    TUPLE = 5  # result i = operand i; also the links of calls, loops and conditionals
    ADD = 6  # linear in every operand
    NEGATE = 7  # linear in operand 0
    MULTIPLY = 8  # linear in each operand where the other does not depend on it
    DIVIDE = 9  # linear in operand 0 where operand 1 does not depend on it
    CONTRACT = 10  # dot_general, dot, convolution
    REDUCE = 11
    OTHER = 12  # dependence only (elementwise math, compares, loops' own bookkeeping, ...)
    STRUCTURAL = 13  # dependence only, and not an arithmetic combination of its operands


_KIND_BY_NAME: dict[str, Kind] = {}
for _names, _kind in (
    # a scatter holds its input's values; its updates' only where its region sets them
    # (`scatter_update`, linked apart), never its indices'
    (_PASS_OPERAND0 | {_SCATTER}, Kind.PASS0),
    (_PASS_ALL, Kind.PASS_ALL),
    (_PASS_01, Kind.PASS_01),
    (_PASS_12, Kind.PASS_12),
    (_PASS_TUPLE, Kind.TUPLE),
    (_ADD, Kind.ADD),
    (_NEGATE, Kind.NEGATE),
    (_MULTIPLY, Kind.MULTIPLY),
    (_DIVIDE, Kind.DIVIDE),
    (_CONTRACT, Kind.CONTRACT),
    (_REDUCE, Kind.REDUCE),
):
    for _n in _names:
        _KIND_BY_NAME[_n] = _kind

_PASSING = frozenset({Kind.PASS0, Kind.PASS_ALL, Kind.PASS_01, Kind.PASS_12, Kind.TUPLE})


@dataclass(frozen=True, slots=True)
class Step:
    """One op instance (or link) of the inlined program."""

    kind: Kind
    name: str  # the op name ("link" for call/loop/conditional links)
    operands: tuple[int, ...]
    results: tuple[int, ...]
    type: str = ""  # the op's printed function type (jaxjudge.analysis.stablehlo.Op.type)

    def pass_sources(self) -> Iterable[tuple[int, int]]:
        """(operand, result) pairs along which values pass unchanged."""
        ops, res = self.operands, self.results
        if self.kind is Kind.PASS0:
            if ops:
                return [(ops[0], r) for r in res]
        elif self.kind is Kind.PASS_ALL:
            return [(o, r) for o in ops for r in res]
        elif self.kind is Kind.PASS_01:
            return [(o, r) for o in ops[:2] for r in res]
        elif self.kind is Kind.PASS_12:
            return [(o, r) for o in ops[1:3] for r in res]
        elif self.kind is Kind.TUPLE:
            return list(zip(ops, res, strict=False))
        return []


class TooComplex(Exception):
    """The analysis would take more work than its budget (a program built to be slow)."""


class Budget:
    """Step evaluations left for one grade's analyses: a deterministic bound on the trusted
    side's time, shared by every program and propagation it is handed to."""

    def __init__(self, steps: int = MAX_WORK) -> None:
        self.left = steps

    def spend(self, n: int = 1) -> None:
        self.left -= n
        if self.left < 0:
            raise TooComplex("the analysis needs more work than its budget")


@dataclass
class Loop:
    """One inlined `stablehlo.while`: the nodes it starts from, carries and returns, and the
    steps its regions became (`steps[first:end]`, nested loops included; the back edges are
    linked right after)."""

    operands: tuple[int, ...]
    results: tuple[int, ...]
    cond_args: tuple[int, ...]
    body_args: tuple[int, ...]
    cond_returns: tuple[tuple[int, ...], ...]
    body_returns: tuple[tuple[int, ...], ...]
    first: int
    end: int = -1
    # per operand, its element count from the op's type (None: unknown)
    sizes: tuple[int | None, ...] = ()


@dataclass
class Graph:
    """The inlined program: steps in program order, main's arguments and results; the op each
    plain step came from (`ops[i]`, None for links and region ops) and the while loops."""

    steps: list[Step] = field(default_factory=list)
    n_nodes: int = 0
    main_args: list[int] = field(default_factory=list)
    main_results: list[int] = field(default_factory=list)
    main_arg_types: list[str] = field(default_factory=list)  # printed, as main declares them
    budget: Budget = field(default_factory=Budget)
    ops: list[Op | None] = field(default_factory=list)
    loops: list[Loop] = field(default_factory=list)
    # A region op's step (reduce, sort, scatter, ...; `ops` holds None there, as its regions'
    # values are linked separately) -> the op, for rules that read its type and attributes.
    region_ops: dict[int, Op] = field(default_factory=dict)
    _consumers: list[list[int]] | None = None
    _producers: list[list[tuple[int, int]]] | None = None

    def consumers(self) -> list[list[int]]:
        """node -> indices of the steps that read it (built once)."""
        if self._consumers is None:
            self._consumers = [[] for _ in range(self.n_nodes)]
            for i, s in enumerate(self.steps):
                for o in set(s.operands):
                    self._consumers[o].append(i)
        return self._consumers

    def producers(self) -> list[list[tuple[int, int]]]:
        """node -> (step index, position) of the steps that write it: the position of the
        result in a link/tuple step (whose result i is operand i), -1 for the others (built
        once; a loop with K carried values costs K, not K squared, to look up)."""
        if self._producers is None:
            self._producers = [[] for _ in range(self.n_nodes)]
            for i, s in enumerate(self.steps):
                if s.kind is Kind.TUPLE:
                    for pos, r in enumerate(s.results):
                        self._producers[r].append((i, pos))
                else:
                    for r in set(s.results):
                        self._producers[r].append((i, -1))
        return self._producers




def scatter_update(op: Op) -> str:
    """What a scatter's update region makes of an element: "set" (it returns the update,
    `.at[i].set`), "add" (the element plus the update, `.at[i].add`, a gather's transpose)
    or "other"."""
    if not op.regions or not op.regions[0]:
        return "other"
    block = op.regions[0][0]
    body = [x for b in op.regions[0] for x in b.ops]
    if len(block.args) != 2 or not body or body[-1].name not in _RETURNS:
        return "other"
    if len(body) == 1 and body[0].operands == [block.args[1]]:
        return "set"
    if (len(body) == 2 and body[0].name == "stablehlo.add"
            and sorted(body[0].operands) == sorted(block.args)
            and body[1].operands == body[0].results):
        return "add"
    return "other"


def _region_returns(region: list[Block]) -> list[Op]:
    return [op for block in region for op in block.ops if op.name in _RETURNS]


def _check_calls_acyclic(functions: dict[str, Op]) -> None:
    """Refuse recursion up front, iteratively, so inlining needs no per-path bookkeeping."""
    callees: dict[str, set[str]] = {}
    for name, fn in functions.items():
        found: set[str] = set()
        stack = [op for region in fn.regions for b in region for op in b.ops]
        while stack:
            op = stack.pop()
            if op.name == "func.call":
                callee = op.attrs.get("callee", "")
                if callee not in functions:
                    raise ParseError(f"func.call to unknown function @{callee}")
                found.add(callee)
            for region in op.regions:
                for b in region:
                    stack.extend(b.ops)
        callees[name] = found
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in functions:
        if state.get(root):
            continue
        path: list[tuple[str, list[str]]] = [(root, sorted(callees[root]))]
        state[root] = 1
        while path:
            name, todo = path[-1]
            if not todo:
                state[name] = 2
                path.pop()
                continue
            nxt = todo.pop()
            if state.get(nxt) == 1:
                raise ParseError(f"recursive call to @{nxt}")
            if not state.get(nxt):
                state[nxt] = 1
                path.append((nxt, sorted(callees[nxt])))


def build_graph(module: Module) -> Graph:
    """Inline the module's main into steps. Raises ParseError on anything unreadable or over
    MAX_INLINED_STEPS (a program made huge by nesting or repeating calls)."""
    functions = module.functions()
    main = functions.get("main")
    if main is None:
        publics = [f for f in functions.values() if f.attrs.get("sym_visibility") == "public"]
        main = publics[0] if len(publics) == 1 else None
    if main is None or not main.regions or not main.regions[0]:
        raise ParseError("the module has no main function")
    _check_calls_acyclic(functions)
    g = Graph()
    ids: dict[tuple[int, str], int] = {}

    def node(inst: int, name: str) -> int:
        key = (inst, name)
        found = ids.get(key)
        if found is None:
            found = ids[key] = g.n_nodes
            g.n_nodes += 1
        return found

    def emit(kind: Kind, name: str, operands: Iterable[int], results: Iterable[int],
             type_: str = "", op: Op | None = None) -> None:
        g.steps.append(Step(kind, name, tuple(operands), tuple(results), type_))
        g.ops.append(op)
        if len(g.steps) > MAX_INLINED_STEPS:
            raise ParseError(f"the program has more than {MAX_INLINED_STEPS} ops once inlined")

    def link(src: list[int], dst: list[int]) -> None:
        n = min(len(src), len(dst))
        if n:
            emit(Kind.TUPLE, "link", src[:n], dst[:n])

    entry = main.regions[0][0]
    g.main_args = [node(0, a) for a in entry.args]
    g.main_arg_types = list(entry.arg_types)
    for ret in _region_returns(main.regions[0]):
        g.main_results = [node(0, v) for v in ret.operands]
        break
    n_insts = 1
    # An explicit stack of work: ops still to emit, or deferred link steps (loop back edges and
    # call results), in program order.
    Work = tuple[Op, int] | Callable[[], None]
    work: list[Work] = [(op, 0) for op in reversed(entry.ops)]
    for block in main.regions[0][1:]:
        work[:0] = [(op, 0) for op in reversed(block.ops)]
    while work:
        item = work.pop()
        if callable(item):
            item()
            continue
        op, inst = item
        res = [node(inst, r) for r in op.results]
        opd = [node(inst, o) for o in op.operands]
        name = op.name
        if name == "func.call":
            callee = functions[op.attrs.get("callee", "")]
            if not callee.regions or not callee.regions[0]:
                raise ParseError(f"func.call to an empty function @{op.attrs.get('callee')}")
            sub = n_insts
            n_insts += 1
            body = callee.regions[0]
            link(opd, [node(sub, a) for a in body[0].args])
            rets = [[node(sub, v) for v in r.operands] for r in _region_returns(body)]

            def after(rets: list[list[int]] = rets, res: list[int] = res) -> None:
                for r in rets:
                    link(r, res)

            work.append(after)
            for block in reversed(body):
                work.extend((o, sub) for o in reversed(block.ops))
            continue
        if name in _RETURNS:
            continue  # returns are read through the links their parents make
        if name == "stablehlo.while" and len(op.regions) == 2:
            cond, body = op.regions
            heads = [[node(inst, a) for a in region[0].args] for region in (cond, body) if region]
            link(opd, res)
            for args in heads:
                link(opd, args)
            backs = [[node(inst, v) for v in r.operands] for r in _region_returns(body)]
            loop = Loop(
                tuple(opd), tuple(res), tuple(heads[0]) if cond else (),
                tuple(heads[-1]) if body else (),
                tuple(tuple(node(inst, v) for v in r.operands) for r in _region_returns(cond)),
                tuple(tuple(b) for b in backs), len(g.steps))
            given = tensor_types(op.type.partition("->")[0])
            if len(given) == len(opd):
                loop.sizes = tuple(t.elements() for t in given)
            g.loops.append(loop)

            def after_loop(backs: list[list[int]] = backs, res: list[int] = res,
                           heads: list[list[int]] = heads, loop: Loop = loop) -> None:
                loop.end = len(g.steps)
                for back in backs:
                    link(back, res)
                    for args in heads:
                        link(back, args)

            work.append(after_loop)
            for region in reversed(op.regions):
                for block in reversed(region):
                    work.extend((o, inst) for o in reversed(block.ops))
            continue
        if op.regions:
            # Conditionals, reductions, sorts, maps...: their region values share the
            # function's namespace; what a region returns becomes the op's results.
            rets = [
                [node(inst, v) for v in r.operands]
                for region in op.regions
                for r in _region_returns(region)
            ]
            kind = _KIND_BY_NAME.get(name, Kind.STRUCTURAL if name in _CONDITIONALS else Kind.OTHER)

            def after_regions(rets: list[list[int]] = rets, res: list[int] = res,
                              opd: list[int] = opd, kind: Kind = kind, name: str = name,
                              op: Op = op) -> None:
                g.region_ops[len(g.steps)] = op
                emit(kind, name, opd, res)
                if name == _SCATTER and scatter_update(op) == "set":
                    emit(Kind.TUPLE, "scatter.update", opd[len(res) + 1:], res)
                for r in rets:
                    if name in _CONDITIONALS:
                        link(r, res)
                    else:
                        emit(Kind.OTHER, name, r, res)

            work.append(after_regions)
            for region in reversed(op.regions):
                for block in reversed(region):
                    work.extend((o, inst) for o in reversed(block.ops))
            continue
        if name in _SIZE_ONLY:
            opd = []  # reads a shape: depends on no value (see the module docstring)
        emit(_KIND_BY_NAME.get(name, Kind.OTHER), name, opd, res, op.type, op)
    return g


def propagate(
    g: Graph,
    seeds: dict[int, int],
    transfer: Callable[[Step, list[int]], list[int] | None],
) -> list[int]:
    """Forward fixpoint of bit sets: `transfer(step, bits)` gives each result's bits from the
    current bits (None: nothing flows). A worklist in program order: a step is evaluated again
    only when one of its operands gained bits (loop back edges), so a loop costs its own steps
    per change, not a pass over the whole program. Each evaluation spends from `g.budget`."""
    bits = [0] * g.n_nodes
    for n, b in seeds.items():
        bits[n] |= b
    steps, consumers, budget = g.steps, g.consumers(), g.budget
    queue: deque[int] = deque(range(len(steps)))
    queued = bytearray(b"\x01") * len(steps)
    while queue:
        i = queue.popleft()
        queued[i] = 0
        step = steps[i]
        budget.spend(max(1, len(step.operands)))  # a K-wide loop link costs K per visit
        out = transfer(step, bits)
        if out is None:
            continue
        for r, b in zip(step.results, out, strict=False):
            if b and (bits[r] | b) != bits[r]:
                bits[r] |= b
                for j in consumers[r]:
                    if not queued[j]:
                        queued[j] = 1
                        queue.append(j)
    return bits


def pass_transfer(step: Step, bits: list[int]) -> list[int] | None:
    """Same values only: the PASS kinds."""
    if step.kind not in _PASSING:
        return None
    out = [0] * len(step.results)
    index = {r: i for i, r in enumerate(step.results)}
    for o, r in step.pass_sources():
        out[index[r]] |= bits[o]
    return out


# Elementwise (and other value-preserving-or-mixing) kinds: a value computed from T by these is
# still "a value of T" (clamped, scaled, shifted, exponentiated...), and a value computed from
# an argument by these is still that argument. Contractions and reductions end it.
ELEMENTWISE = frozenset({Kind.ADD, Kind.NEGATE, Kind.MULTIPLY, Kind.DIVIDE, Kind.OTHER})


def elementwise_transfer(step: Step, bits: list[int]) -> list[int] | None:
    """Values pass through layout ops (per index) and every elementwise op (union)."""
    if step.kind in ELEMENTWISE:
        acc = 0
        for o in step.operands:
            acc |= bits[o]
        return [acc] * len(step.results) if acc else None
    return pass_transfer(step, bits)


def full_transfer(step: Step, bits: list[int]) -> list[int] | None:
    """Any dependence: every result depends on every operand (result i on operand i for
    links and tuples, which keeps loop-carried values apart)."""
    if step.kind is Kind.TUPLE:
        return [bits[o] for o in step.operands[: len(step.results)]]
    acc = 0
    for o in step.operands:
        acc |= bits[o]
    return [acc] * len(step.results) if acc else None


def ancestors(g: Graph, targets: Iterable[int]) -> set[int]:
    """Every node some target depends on (the reverse of `full_transfer`'s edges), by a search
    over each node's producing steps."""
    seen = set(targets)
    stack = list(seen)
    producers, budget = g.producers(), g.budget
    while stack:
        n = stack.pop()
        for i, pos in producers[n]:
            step = g.steps[i]
            if pos >= 0:
                budget.spend()
                found = [step.operands[pos]] if pos < len(step.operands) else []
            else:
                budget.spend(max(1, len(step.operands)))
                found = list(step.operands)
            for o in found:
                if o not in seen:
                    seen.add(o)
                    stack.append(o)
    return seen


def combining_scatters(g: Graph) -> set[int]:
    """The `id`s of the scatter steps whose update region computes (`.at[i].add`,
    `segment_sum`), as opposed to one that returns the new value (`.at[i].set`): its region's
    returned value has a producer."""
    producers = g.producers()
    g.budget.spend(len(g.steps))
    out: set[int] = set()
    for i, step in enumerate(g.steps):
        if step.name != _SCATTER or step.kind is Kind.OTHER:
            continue
        for ret in g.steps[i + 1:]:
            if ret.name != _SCATTER or ret.kind is not Kind.OTHER or ret.results != step.results:
                break
            if any(producers[o] for o in ret.operands):
                out.add(id(step))
    return out
