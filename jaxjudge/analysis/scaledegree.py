"""The power of an input each value carries: how it grows when that input is scaled.

"The backward pass carries the loss scale" means its values grow with the scale: doubled when
the scale doubles. A value merely computed from the scale need not (`s / s` is 1 whatever s
is). So each value gets the set of degrees d with which it may scale as s**d, followed through
the program's dataflow as a monotone fixpoint (loops may give a value several): a product or a
matrix product adds its operands' degrees, a quotient subtracts them, a sum, a negation, a
reduction, a selection or a re-layout keeps them, and any other function of a scaled value
(`exp`, `min` with a cap, a comparison) is of no known degree. A value that does not depend on
the input has degree 0; a constant (folded) has none.
"""

from __future__ import annotations

from jaxjudge.analysis.dataflow import Kind, Step, pass_transfer, propagate
from jaxjudge.analysis.flowpaths import SHAPE_ONLY, Flow

LOW, HIGH = -3, 3  # degrees followed; any other is UNKNOWN
UNKNOWN = 1 << (HIGH - LOW + 1)
_KEEP = frozenset({Kind.ADD, Kind.NEGATE, Kind.REDUCE})
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


def scale_degrees(flow: Flow, seeds: list[int]) -> list[int]:
    """Per node, the degree bits of the input at the `seeds` nodes (each of degree 1)."""
    values, gives = flow.values, flow.gives

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
        if step.kind in _PASSING:
            if step.name == "stablehlo.select" and len(ops) == 3 and values[ops[0]] is not None:
                return [bits[ops[1] if values[ops[0]] else ops[2]]] * n
            return pass_transfer(step, bits)
        if not any(bits[o] for o in ops):
            return None
        if step.kind in _KEEP:
            acc = 0
            for o in ops:
                acc |= bits[o]
            return [acc] * n
        if step.kind in (Kind.MULTIPLY, Kind.CONTRACT) and len(ops) >= 2:
            return [_combine(bits[ops[0]], bits[ops[1]], 1)] * n
        if step.kind is Kind.DIVIDE and len(ops) >= 2:
            return [_combine(bits[ops[0]], bits[ops[1]], -1)] * n
        return [UNKNOWN] * n

    return propagate(flow.graph, {s: degree(1) for s in seeds}, transfer)
