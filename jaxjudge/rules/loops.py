"""Loop analysis for `loop_over_dim`: how many steps each while loop runs.

Every `scan`, `fori_loop`, `while_loop` and `map` becomes a `stablehlo.while`; JAX 0.4.38 and
0.10 lower them a little differently (the body inline or through `func.call`, a bound that is an
array carried through the loop, index arithmetic before or after a `convert`), so nothing here
matches a lowering: it reads the inlined dataflow (`jaxjudge.rules.dataflow`).

- **Constants** are folded over the whole inlined program, loops and calls included (sparse
  conditional constant propagation: a node is unset, one scalar value for all its elements, or
  not constant; a loop-carried value that changes is not constant). `0 * v`, `and(false, v)` and
  a `select` on a constant predicate fold without `v`, so a value multiplied by zero, or left
  out by a `where` on a constant, depends on nothing.
- **Trip count**: the condition must be `compare(iv, bound)` (either order; LT, LE, GT, GE, NE
  or EQ) with `iv` a carried integer whose body update is `iv + step` (or `iv - step`), the
  step, the bound and `iv`'s initial value folding to constants. The count is then worked out
  (`ceil((bound - start) / step)` for `<`); anything else has no known count.

All work is counted against the grade's `Budget` (one for all of a grade's programs), like the
other program-level rules: a program built to be slow fails the rule instead of stalling it.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from jaxjudge.rules.dataflow import Graph, Kind, Loop, Step
from jaxjudge.rules.stablehlo import Op, tensor_types

MAX_TRIP_COUNT = 1 << 31
_MAX_INT = 1 << 62


class _Unset:
    """No value yet (optimistic: the node may still turn out constant)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET = _Unset()
# Node values: UNSET, None (not a constant), or an int/float scalar that every element holds.
Value = int | float | _Unset | None

_SAME = frozenset({
    "stablehlo.reshape", "stablehlo.broadcast_in_dim", "stablehlo.broadcast",
    "stablehlo.transpose", "stablehlo.copy", "mhlo.copy", "stablehlo.slice",
    "stablehlo.dynamic_slice", "stablehlo.reverse", "stablehlo.gather",
    "stablehlo.dynamic_reshape", "stablehlo.dynamic_broadcast_in_dim",
    "stablehlo.real_dynamic_slice", "stablehlo.dynamic_gather",
})
_ALL_EQUAL = frozenset({"stablehlo.concatenate"})
_FIRST_TWO_EQUAL = frozenset({"stablehlo.dynamic_update_slice", "stablehlo.pad",
                              "stablehlo.dynamic_pad"})
_ZERO_ABSORBS = frozenset({"stablehlo.multiply", "stablehlo.and", "stablehlo.dot_general",
                           "stablehlo.dot", "stablehlo.convolution"})
_COMPARE = {
    "LT": lambda a, b: a < b, "LE": lambda a, b: a <= b, "GT": lambda a, b: a > b,
    "GE": lambda a, b: a >= b, "EQ": lambda a, b: a == b, "NE": lambda a, b: a != b,
}
_SWAPPED = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "EQ": "EQ", "NE": "NE"}


def _element(op: Op) -> str:
    """The element type of the op's first result ("" when unknown)."""
    types = op.result_types()
    return types[0].element if types else ""


def _is_int(element: str) -> bool:
    return element.startswith(("i", "ui"))


def _is_float(element: str) -> bool:
    return element.startswith(("f", "bf"))


def _cast(value: int | float, element: str) -> int | float | None:
    """A scalar as the element type holds it; None when it does not fit or is not finite."""
    if element == "i1":
        return int(bool(value))
    if _is_int(element):
        if isinstance(value, float):
            if not math.isfinite(value):
                return None
            value = math.trunc(value)
        if abs(value) >= _MAX_INT or (element.startswith("ui") and value < 0):
            return None
        return int(value)
    if _is_float(element):
        out = float(value)
        return None if math.isnan(out) else out
    return None


def _literal(op: Op) -> int | float | None:
    """A splat constant's value (`dense<5>`, `dense<5.000000e-01>`, `dense<true>`)."""
    raw = op.attrs.get("value", "")
    body = raw[6:-1] if raw.startswith("dense<") and raw.endswith(">") else ""
    element = _element(op)
    if not body or len(body) > 40:
        return None
    try:
        if element == "i1":
            return {"true": 1, "false": 0}.get(body)
        if _is_int(element):
            return _cast(int(body), element)
        if _is_float(element) and not body.lower().startswith("0x"):
            return _cast(float(body), element)
    except (ValueError, OverflowError):
        return None
    return None


def _binary(name: str, a: int | float, b: int | float, element: str) -> int | float | None:
    integer = _is_int(element)
    try:
        if name == "stablehlo.add":
            out = a + b
        elif name == "stablehlo.subtract":
            out = a - b
        elif name == "stablehlo.multiply":
            out = a * b
        elif name == "stablehlo.divide":
            if b == 0:
                return None
            out = (abs(a) // abs(b)) * (1 if (a >= 0) == (b >= 0) else -1) if integer else a / b
        elif name == "stablehlo.remainder":
            if b == 0:
                return None
            out = int(math.fmod(a, b)) if integer else math.fmod(a, b)
        elif name == "stablehlo.maximum":
            out = max(a, b)
        elif name == "stablehlo.minimum":
            out = min(a, b)
        elif name in ("stablehlo.and", "stablehlo.or", "stablehlo.xor") and integer:
            ia, ib = int(a), int(b)
            out = {"stablehlo.and": ia & ib, "stablehlo.or": ia | ib,
                   "stablehlo.xor": ia ^ ib}[name]
        else:
            return None
    except (OverflowError, ValueError, ZeroDivisionError):
        return None
    return _cast(out, element)


def _unary(name: str, a: int | float, element: str) -> int | float | None:
    if name == "stablehlo.negate":
        out: int | float = -a
    elif name == "stablehlo.abs":
        out = abs(a)
    elif name == "stablehlo.sign":
        out = (a > 0) - (a < 0)
    elif name == "stablehlo.not" and _is_int(element):
        out = 1 - int(a) if element == "i1" else ~int(a)
    elif name == "stablehlo.convert":
        out = a
    else:
        return None
    return _cast(out, element)


def _evaluate(op: Op, args: list[Value]) -> Value:
    """One op's result from its operands' values (UNSET: wait for them; None: not constant)."""
    name = op.name
    if name == "stablehlo.constant":
        return _literal(op)
    element = _element(op)
    known = [a for a in args if a is not None and not isinstance(a, _Unset)]
    if name in _ZERO_ABSORBS and 0 in known:
        return _cast(0, element)  # 0 * v, and(false, v), a product with a zero matrix
    if name == "stablehlo.or" and element == "i1" and 1 in known:
        return 1
    if name == "stablehlo.select" and len(args) == 3:
        pred = args[0]
        if pred is None:
            return args[1] if args[1] == args[2] and args[1] is not None else (
                UNSET if UNSET in args[1:] else None)
        if isinstance(pred, _Unset):
            return UNSET
        return args[1] if pred else args[2]
    if any(isinstance(a, _Unset) for a in args):
        return UNSET
    if any(a is None for a in args) or not args:
        return None
    if name in _SAME:
        return args[0]
    if name in _ALL_EQUAL:
        return args[0] if all(a == args[0] for a in args) else None
    if name in _FIRST_TWO_EQUAL:
        return args[0] if len(args) >= 2 and args[0] == args[1] else None
    if name == "stablehlo.compare" and len(args) == 2:
        test = _COMPARE.get(op.attrs.get("comparison_direction", ""))
        return None if test is None else int(test(args[0], args[1]))
    if name == "stablehlo.clamp" and len(args) == 3:
        return _cast(min(max(args[1], args[0]), args[2]), element)
    if len(args) == 1:
        return _unary(name, args[0], element)  # type: ignore[arg-type]
    if len(args) == 2:
        return _binary(name, args[0], args[1], element)  # type: ignore[arg-type]
    return None


def fold_constants(g: Graph) -> list[Value]:
    """Every node's constant value (None: not a constant), by a worklist over the inlined
    steps: a node's value only ever goes from UNSET to a value to None, so each step is
    evaluated a bounded number of times."""
    values: list[Value] = [UNSET] * g.n_nodes
    for a in g.main_args:
        values[a] = None
    steps, ops, consumers, budget = g.steps, g.ops, g.consumers(), g.budget
    queue: deque[int] = deque(range(len(steps)))
    queued = bytearray(b"\x01") * len(steps)
    while queue:
        i = queue.popleft()
        queued[i] = 0
        step = steps[i]
        budget.spend(max(1, len(step.operands)))
        if step.kind is Kind.TUPLE:
            outs = [values[o] for o in step.operands[: len(step.results)]]
        else:
            op = ops[i] if i < len(ops) else None
            if op is None or len(step.results) != 1:
                outs = [None] * len(step.results)
            else:
                outs = [_evaluate(op, [values[o] for o in step.operands])]
        for r, v in zip(step.results, outs, strict=False):
            old = values[r]
            if isinstance(v, _Unset) or old is None:
                continue
            if isinstance(old, _Unset):
                values[r] = v
            elif v is not None and v == old:
                continue
            else:
                values[r] = None  # two different values: not a constant
            for j in consumers[r]:
                if not queued[j]:
                    queued[j] = 1
                    queue.append(j)
    return [None if isinstance(v, _Unset) else v for v in values]


# -- trip counts ------------------------------------------------------------------------------

def _origin(g: Graph, n: int) -> int:
    """The node `n` is a copy of: back through links with one source and integer converts."""
    producers, budget = g.producers(), g.budget
    for _ in range(10_000):
        budget.spend()
        found = producers[n]
        if len(found) != 1:
            return n
        i, pos = found[0]
        step = g.steps[i]
        if pos >= 0 and pos < len(step.operands):
            n = step.operands[pos]
            continue
        op = g.ops[i]
        if (step.name == "stablehlo.convert" and op is not None and len(step.operands) == 1
                and all(_is_int(t.element) for t in tensor_types(op.type))):
            n = step.operands[0]
            continue
        return n
    return n


def _producer(g: Graph, n: int) -> tuple[Step, Op] | None:
    """The one plain op that writes `n`, if there is exactly one."""
    found = g.producers()[n]
    if len(found) != 1 or found[0][1] >= 0:
        return None
    op = g.ops[found[0][0]]
    return None if op is None else (g.steps[found[0][0]], op)


def _int_value(values: list[Value], n: int) -> int | None:
    v = values[n]
    return v if isinstance(v, int) else None


def _count(direction: str, start: int, step: int, bound: int) -> int | None:
    """How many times `iv (direction) bound` holds for iv = start, start + step, ..."""
    holds = _COMPARE[direction]
    if not holds(start, bound):
        return 0
    if direction == "EQ":
        return 1 if step != 0 else None
    if direction == "NE":
        if step == 0 or (bound - start) % step or (bound - start) // step < 0:
            return None
        return (bound - start) // step
    if direction in ("LT", "LE"):
        if step <= 0:
            return None
        last = bound if direction == "LT" else bound + 1
        return -(-(last - start) // step)
    if step >= 0:
        return None
    last = bound if direction == "GT" else bound - 1
    return -(-(start - last) // -step)


def trip_count(g: Graph, values: list[Value], loop: Loop) -> tuple[int, int] | None:
    """(iterations, carried position of the counter), or None when they cannot be proven."""
    if len(loop.cond_returns) != 1 or len(loop.cond_returns[0]) != 1 or not loop.body_returns:
        return None
    found = _producer(g, _origin(g, loop.cond_returns[0][0]))
    if found is None or found[1].name != "stablehlo.compare" or len(found[0].operands) != 2:
        return None
    step, op = found
    direction = op.attrs.get("comparison_direction", "")
    if direction not in _COMPARE or op.attrs.get("compare_type") not in (None, "SIGNED",
                                                                          "UNSIGNED"):
        return None
    heads = {n: p for p, n in enumerate(loop.cond_args)}
    for side in (0, 1):
        iv, other = step.operands[side], step.operands[1 - side]
        p = heads.get(_origin(g, iv))
        bound = _int_value(values, other)
        if p is None or bound is None or p >= len(loop.operands) or p >= len(loop.body_args):
            continue
        start = _int_value(values, loop.operands[p])
        if start is None:
            continue
        steps = {_step(g, values, loop, ret, p) for ret in loop.body_returns}
        if len(steps) != 1:
            continue
        delta = steps.pop()
        if delta is None:
            continue
        n = _count(direction if side == 0 else _SWAPPED[direction], start, delta, bound)
        if n is not None and 0 <= n <= MAX_TRIP_COUNT:
            return n, p
    return None


def _step(g: Graph, values: list[Value], loop: Loop, ret: tuple[int, ...], p: int) -> int | None:
    """The constant the body adds to carried value p (`iv + c`, `c + iv`, `iv - c`)."""
    if p >= len(ret):
        return None
    found = _producer(g, _origin(g, ret[p]))
    if found is None or found[1].name not in ("stablehlo.add", "stablehlo.subtract"):
        return None
    step, op = found
    if len(step.operands) != 2:
        return None
    a, b = (_origin(g, o) for o in step.operands)
    iv = loop.body_args[p]
    if a == iv and _int_value(values, step.operands[1]) is not None:
        c = _int_value(values, step.operands[1])
        return c if op.name == "stablehlo.add" else -c  # type: ignore[operator]
    if b == iv and op.name == "stablehlo.add":
        return _int_value(values, step.operands[0])
    return None


# -- findings --------------------------------------------------------------------------------

@dataclass
class LoopFinding:
    """One while loop of the inlined program: its trip count (None: not proven)."""

    count: int | None


def analyze_loops(g: Graph) -> list[LoopFinding]:
    """Every while loop of the program, in program order, with its trip count."""
    values = fold_constants(g)
    findings: list[LoopFinding] = []
    for loop in g.loops:
        counted = trip_count(g, values, loop)
        findings.append(LoopFinding(None if counted is None else counted[0]))
    return findings
