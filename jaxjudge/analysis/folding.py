"""Constant folding over the inlined dataflow, and dependence that folding cuts.

Sparse conditional constant propagation over the whole inlined program, loops and calls
included: a node is unset, one scalar value for all its elements, or not constant; a
loop-carried value that changes is not constant. `0 * v`, `and(false, v)` and a `select` on a
constant predicate fold without `v`, so a value multiplied by zero, or left out by a `where` on
a constant, depends on nothing. The program-level rules that ask "does this reach the outputs?"
(`jaxjudge.analysis.loops`, `jaxjudge.rules.products`) read dependence through it, so a decoy
multiplied by 0 is not live. The transfers also take the steps that give an operand back (a
product with the identity, `x * 1`: `jaxjudge.analysis.identity`, which reads them from these
folds): such a step holds that operand's values and depends on it alone. Every evaluation
spends from the graph's `Budget`.
"""

from __future__ import annotations

import functools
import math
from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from jaxjudge.analysis.dataflow import Graph, Kind, Step, pass_transfer
from jaxjudge.analysis.stablehlo import Op


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
COMPARE = {
    "LT": lambda a, b: a < b, "LE": lambda a, b: a <= b, "GT": lambda a, b: a > b,
    "GE": lambda a, b: a >= b, "EQ": lambda a, b: a == b, "NE": lambda a, b: a != b,
}


def element_of(op: Op) -> str:
    """The element type of the op's first result ("" when unknown)."""
    types = op.result_types()
    return types[0].element if types else ""


def is_int(element: str) -> bool:
    """Signed or unsigned integer (i1 included)."""
    return element.startswith(("i", "ui"))


def _is_float(element: str) -> bool:
    return element.startswith(("f", "bf"))


def fits(value: int, element: str) -> bool:
    """Whether an integer is held exactly by the element type (no wrap-around)."""
    low, high = _range(element)
    return low <= value < high


@functools.lru_cache(maxsize=64)
def _range(element: str) -> tuple[int, int]:
    """[low, high) of an integer element type (empty for anything else)."""
    digits = element.removeprefix("ui").removeprefix("i")
    if element == "i1":
        return 0, 2
    if not digits.isdigit() or not element.startswith(("i", "ui")):
        return 0, 0
    bits = int(digits)
    if element.startswith("ui"):
        return 0, 1 << bits
    return -(1 << (bits - 1)), 1 << (bits - 1)


def _cast(value: int | float, element: str, literal: bool = False) -> int | float | None:
    """A scalar as the element type holds it at run time; None when that is not certain.
    Integers wrap around as two's complement (int8 200 is -56); a float converted to an
    integer it does not fit is None (the conversion saturates or is undefined). Floats round
    to the type (float32 1 + 1e-8 is 1): a condition on the folded value must be the one the
    program computes. A 16-bit float computed by arithmetic is kept only when exact, since
    XLA may carry it in float32 between ops; a `literal` rounds to the type."""
    if element == "i1":
        return int(bool(value))
    if is_int(element):
        if isinstance(value, float):
            if not math.isfinite(value) or not fits(math.trunc(value), element):
                return None
            return math.trunc(value)
        low, high = _range(element)
        if high <= low:
            return None
        return (int(value) - low) % (high - low) + low
    if _is_float(element):
        out = float(value)
        if math.isnan(out):
            return None
        rounded = _rounded(out, element)
        if rounded is None or (element in _HALF and not literal and rounded != out):
            return None
        return rounded
    return None


_HALF = frozenset({"bf16", "f16"})


def _rounded(value: float, element: str) -> float | None:
    """`value` rounded to nearest-even in the float type (None: a type not folded)."""
    if element == "f64" or math.isinf(value):
        return value
    if element == "f32":
        with np.errstate(over="ignore"):
            return float(np.float32(value))
    if element == "f16":
        with np.errstate(over="ignore"):
            return float(np.float16(value))
    if element == "bf16":  # float32's top 16 bits, rounded to nearest even
        with np.errstate(over="ignore"):
            bits = int(np.float32(value).view(np.uint32))
        if (bits >> 23) & 0xFF == 0xFF:  # inf (or a float32 overflow): kept as it is
            return float(np.uint32(bits & 0xFFFF0000).view(np.float32))
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        return float(np.uint32(bits & 0xFFFFFFFF).view(np.float32))
    return None


def _literal(op: Op) -> int | float | None:
    """A splat constant's value (`dense<5>`, `dense<5.000000e-01>`, `dense<true>`)."""
    raw = op.attrs.get("value", "")
    body = raw[6:-1] if raw.startswith("dense<") and raw.endswith(">") else ""
    element = element_of(op)
    if not body or len(body) > 40:
        return None
    try:
        if element == "i1":
            return {"true": 1, "false": 0}.get(body)
        if is_int(element):
            return _cast(int(body), element, literal=True)
        if _is_float(element) and not body.lower().startswith("0x"):
            return _cast(float(body), element, literal=True)
    except (ValueError, OverflowError):
        return None
    return None


def _binary(name: str, a: int | float, b: int | float, element: str) -> int | float | None:
    integer = is_int(element)
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
    elif name == "stablehlo.not" and is_int(element):
        out = 1 - int(a) if element == "i1" else ~int(a)
    elif name == "stablehlo.convert":
        out = a
    else:
        return None
    return _cast(out, element)


def evaluate(op: Op, args: list[Value], exact: bool = False, element: str | None = None
             ) -> Value:
    """One op's result from its operands' values (UNSET: wait for them; None: not constant);
    `element` is the op's result element type, when the caller has it already."""
    name = op.name
    if name == "stablehlo.constant":
        return _literal(op)
    element = element_of(op) if element is None else element
    known = [a for a in args if a is not None and not isinstance(a, _Unset)]
    if name in _ZERO_ABSORBS and 0 in known and not (exact and _is_float(element)):
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
    # A splat re-laid-out, sliced, gathered or padded with itself keeps its value whatever the
    # other operands (shapes, indices, padding sizes) are: with symbolic dimensions those are
    # computed from sizes, and `0 * x` must fold on both export paths.
    if name in _SAME and args:
        return args[0]
    if name in _FIRST_TWO_EQUAL and len(args) >= 2:
        if isinstance(args[0], _Unset) or isinstance(args[1], _Unset):
            return UNSET
        return args[0] if args[0] is not None and args[0] == args[1] else None
    if any(isinstance(a, _Unset) for a in args):
        return UNSET
    if any(a is None for a in args) or not args:
        return None
    if name in _ALL_EQUAL:
        return args[0] if all(a == args[0] for a in args) else None
    if name == "stablehlo.compare" and len(args) == 2:
        test = COMPARE.get(op.attrs.get("comparison_direction", ""))
        if op.attrs.get("compare_type") == "TOTALORDER":  # -0.0 < 0.0 there: not folded
            return None
        return None if test is None else int(test(args[0], args[1]))
    if name == "stablehlo.clamp" and len(args) == 3:
        return _cast(min(max(args[1], args[0]), args[2]), element)
    if len(args) == 1:
        return _unary(name, args[0], element)  # type: ignore[arg-type]
    if len(args) == 2:
        return _binary(name, args[0], args[1], element)  # type: ignore[arg-type]
    return None


def fold_constants(g: Graph, *, exact: bool = False) -> list[Value]:
    """Every node's constant value (None: not a constant), by `fixpoint`.

    A float `0 * v` is 0 only while v is finite (`0 * inf` is NaN), so a value multiplied by
    0.0 can still reach the outputs, one bit at a time. Rules that require a value to reach the
    outputs fold it anyway (a decoy times 0.0 does not count); `exact=True`, for rules that
    forbid a value from reaching them, folds only what is 0 for every input (integers)."""
    return fixpoint(g, lambda op, step, values: evaluate(
        op, [values[o] for o in step.operands], exact))  # type: ignore[return-value]


def fixpoint(g: Graph, one: Callable[[Op, Step, list], object]) -> list:
    """Every node's abstract value (None: none), by an optimistic worklist over the inlined
    steps: `one(op, step, values)` is a one-result op's value from its operands' (UNSET: wait
    for them); links pass theirs along. A node's value only ever goes from UNSET to a value to
    None (two steps giving it different ones, as a loop-carried value that changes), so each
    step is evaluated a bounded number of times, each time spent from the graph's `Budget`."""
    values: list = [UNSET] * g.n_nodes
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
                outs = [one(op, step, values)]
        for r, v in zip(step.results, outs, strict=False):
            old = values[r]
            if v is UNSET or old is None or (v is not None and v == old):
                continue
            values[r] = v if old is UNSET else None  # two different values: not one
            for j in consumers[r]:
                if not queued[j]:
                    queued[j] = 1
                    queue.append(j)
    return [None if v is UNSET else v for v in values]


class Bits(Protocol):
    def __getitem__(self, n: int, /) -> int: ...


class Values(Protocol):
    """Node values: `fold_constants`' list, or a view of it (`jaxjudge.analysis.stepgates`)."""

    def __getitem__(self, n: int, /) -> Value: ...


Transfer = Callable[[Step, Bits], "list[int] | None"]


def make_transfer(values: Values, gives: dict[int, int] | None = None) -> Transfer:
    """Dependence (`full_transfer`) without the dependences constant folding removes: a step
    whose result is a constant depends on nothing, and a select on a constant predicate only
    on the branch it takes; `gives` (id() of a step -> the operand it gives back, see
    `jaxjudge.analysis.identity`) depends only on that operand."""
    gives = gives or {}

    def transfer(step: Step, bits: Bits) -> list[int] | None:
        if step.kind is Kind.TUPLE:
            return [bits[o] for o in step.operands[: len(step.results)]]
        if step.results and all(values[r] is not None for r in step.results):
            return None
        ops = _read(step, values, gives)
        acc = 0
        for o in ops:
            acc |= bits[o]
        return [acc] * len(step.results) if acc else None

    return transfer


def make_value_transfer(values: list[Value], gives: dict[int, int] | None = None
                        ) -> Transfer:
    """Same values (`pass_transfer`: re-laid-out, converted, sliced, concatenated, selected)
    without what constant folding removes: a constant holds no argument's values, and a select
    on a constant predicate holds only the branch it takes; a step in `gives` (a product with
    the identity, `x * 1`: see `make_transfer`) holds the operand it gives back."""
    gives = gives or {}

    def transfer(step: Step, bits: Bits) -> list[int] | None:
        if step.kind is not Kind.TUPLE and step.results and all(
                values[r] is not None for r in step.results):
            return None
        ops = step.operands
        given = gives.get(id(step))
        if given is not None:
            return [bits[given]] * len(step.results)
        if step.name == "stablehlo.select" and len(ops) == 3 and values[ops[0]] is not None:
            return [bits[ops[1] if values[ops[0]] else ops[2]]] * len(step.results)
        return pass_transfer(step, bits)

    return transfer


def _read(step: Step, values: Values, gives: dict[int, int]) -> Sequence[int]:
    """The operands a (non-link) step's result depends on, once folding and `gives` cut."""
    given = gives.get(id(step))
    if given is not None:
        return (given,)
    ops = step.operands
    if step.name == "stablehlo.select" and len(ops) == 3 and values[ops[0]] is not None:
        return (ops[1],) if values[ops[0]] else (ops[2],)
    return ops


def live_nodes(g: Graph, values: list[Value], targets: Sequence[int],
               gives: dict[int, int] | None = None) -> set[int]:
    """Every node the targets depend on, except through constants and what `gives` cuts (see
    `make_transfer`)."""
    gives = gives or {}
    seen = set(targets)
    stack = list(seen)
    producers, budget = g.producers(), g.budget
    while stack:
        n = stack.pop()
        if values[n] is not None:
            continue  # a constant depends on nothing
        for i, pos in producers[n]:
            step = g.steps[i]
            if pos >= 0:
                budget.spend()
                found: Sequence[int] = [step.operands[pos]] if pos < len(step.operands) else []
            else:
                budget.spend(max(1, len(step.operands)))
                found = _read(step, values, gives)
            for o in found:
                if o not in seen:
                    seen.add(o)
                    stack.append(o)
    return seen
