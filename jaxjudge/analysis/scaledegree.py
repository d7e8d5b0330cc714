"""The power of an input each value carries: how it grows when that input is scaled.

"The backward pass carries the loss scale" means its values grow with the scale: doubled when
the scale doubles. A value merely computed from the scale need not (`s / s` is 1 whatever s
is). So each value gets the set of degrees d with which it may scale as s**d, followed through
the program's dataflow as a monotone fixpoint (loops may give a value several): a product or a
matrix product adds its operands' degrees, a quotient subtracts them, a sum, a negation, a
reduction, a selection or a re-layout keeps them, and any other function of a scaled value
(`exp`, `min` with a cap, a square root, a comparison) is of no known degree, which proves
nothing either way (`exactly`). A value that does not depend on
the input has degree 0, so a sum of it and a scaled value has two degrees (`loss + 1e-30 * loss
* s` does not grow with s); a folded constant 0 added, or a reduction's initial value, has none.
"""

from __future__ import annotations

from jaxjudge.analysis.dataflow import Kind, Step, pass_transfer, propagate, scatter_update
from jaxjudge.analysis.flowpaths import SHAPE_ONLY, Flow

LOW, HIGH = -3, 3  # degrees followed; any other is UNKNOWN
UNKNOWN = 1 << (HIGH - LOW + 1)
_SUMS = frozenset({Kind.ADD, Kind.REDUCE})
_PASSING = frozenset({Kind.PASS0, Kind.PASS_ALL, Kind.PASS_01, Kind.PASS_12})


def degree(d: int) -> int:
    """The bit of degree d (UNKNOWN outside [LOW, HIGH])."""
    return 1 << (d - LOW) if LOW <= d <= HIGH else UNKNOWN


def _degrees(bits: int) -> list[int]:
    return [d for d in range(LOW, HIGH + 1) if bits & degree(d)]


def _combine(a: int, b: int, sign: int) -> int:
    """Degrees of a * b (sign 1) or a / b (sign -1); a value with no bits has degree 0."""
    if (a | b) & UNKNOWN:
        return UNKNOWN
    out = 0
    for da in _degrees(a) or [0]:
        for db in _degrees(b) or [0]:
            out |= degree(da + sign * db)
    return out


def _sum(ops: tuple[int, ...] | list[int], bits: list[int], depends: list[int],
         values: list, kind: Kind, n: int) -> list[int] | None:
    """A sum's (or a data-chosen branch's) degrees: each term's, and 0 for a term free of the
    input (a folded 0 added, or a reduction's initial value, is no term)."""
    acc = 0
    for o in ops:
        if bits[o]:
            acc |= bits[o]
        elif not depends[o] and values[o] is None:
            acc |= degree(0)  # an input-free term beside a scaled one
        elif not depends[o] and kind is Kind.ADD and values[o] != 0:
            acc |= degree(0)  # a constant added
    return [acc] * n if acc else None


def several(bits: int) -> bool:
    """Whether the value is a sum of terms of two or more known degrees."""
    return len(_degrees(bits)) > 1


def exactly(bits: int, d: int) -> bool | None:
    """Whether the degrees are d alone (None: some degree is not known, which proves
    nothing either way: a clip to the input's legal range, a square root)."""
    if bits & UNKNOWN:
        return None if not bits & ~UNKNOWN & ~degree(d) else False
    return bits == degree(d)


def _adding_scatters(flow: Flow) -> set[int]:
    """id() of the scatters that add their updates to their input (`.at[i].add`, the
    transpose of a gather): a sum of the two."""
    g = flow.graph
    return {id(g.steps[i]) for i, op in g.region_ops.items()
            if op.name == "stablehlo.scatter" and scatter_update(op) == "add"}


def scale_degrees(flow: Flow, seeds: list[int], depends: list[int] | None = None) -> list[int]:
    """Per node, the degree bits of the input at the `seeds` nodes (each of degree 1).
    depends: per node, nonzero where it is computed from them (`Flow.computed_from`; found
    here when the caller has not already)."""
    values, gives = flow.values, flow.gives
    # what depends on the input at all: an operand that does not is of degree 0 in a sum (one
    # that does but has no degree yet waits for it: a loop's accumulator, before its back edge)
    if depends is None:
        depends = flow.computed_from(dict.fromkeys(seeds, 1))
    adding = _adding_scatters(flow)

    def transfer(step: Step, bits: list[int]) -> list[int] | None:
        ops, n = step.operands, len(step.results)
        if step.kind is Kind.TUPLE:
            return [bits[o] for o in ops[:n]]
        if step.name in SHAPE_ONLY or (step.results and all(values[r] is not None
                                                            for r in step.results)):
            return None  # a size, or a folded constant: no degree
        given = gives.get(id(step))
        if given is not None:  # `x * 1`, a product with the identity: x itself
            return [bits[given]] * n
        select = step.name == "stablehlo.select" and len(ops) == 3
        if select and values[ops[0]] is not None:
            return [bits[ops[1] if values[ops[0]] else ops[2]]] * n
        if select:  # either branch, by data: a branch free of the input is of degree 0
            return _sum(ops[1:], bits, depends, values, Kind.ADD, n)
        if id(step) in adding and len(ops) == 3:  # input + updates (operand 1: indices)
            return _sum((ops[0], ops[2]), bits, depends, values, Kind.ADD, n)
        if step.kind in _PASSING:
            return pass_transfer(step, bits)
        if not any(bits[o] for o in ops):
            return None
        if step.kind is Kind.NEGATE:
            return [bits[ops[0]]] * n
        if step.kind in _SUMS:
            return _sum(ops, bits, depends, values, step.kind, n)
        if step.kind in (Kind.MULTIPLY, Kind.CONTRACT) and len(ops) >= 2:
            return [_combine(bits[ops[0]], bits[ops[1]], 1)] * n
        if step.kind is Kind.DIVIDE and len(ops) >= 2:
            return [_combine(bits[ops[0]], bits[ops[1]], -1)] * n
        return [UNKNOWN] * n

    return propagate(flow.graph, {s: degree(1) for s in seeds}, transfer)
