"""`max_intermediate_elements`: a bound on the size of every value a program computes.

It reads the verified exported programs (trusted side, authoritative), one per input shape
(`static_shapes=True`: every value then has a static type whose element count is exact), through
the same capped parser as the other program-level rules. A problem states the bound as an
expression of its dims (`"4*n"`, `"T*(d + 8)"`) chosen from what honest solutions hold (see
"Choosing bounds" in docs/problem-authoring.md), and says what to do instead in `hint`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.analysis.expr import Expr
from jaxjudge.analysis.parsed import Unreadable
from jaxjudge.analysis.region import region_of
from jaxjudge.analysis.stablehlo import Op, TensorType
from jaxjudge.rules.outcome import RuleOutcome
from jaxjudge.rules.registry import RuleOptions, register
from jaxjudge.rules.structure import _all_ops, _parse, _shapes

DEFAULT_HINT = "Compute the result without materializing a value that large."


class MaxIntermediateOptions(RuleOptions):
    below: Expr = Field(description="every value has fewer elements than this, e.g. 4*n")
    hint: str = Field(default="", max_length=400,
                      description="what to do instead, appended to a failure's message")


@register("max_intermediate_elements", "program", MaxIntermediateOptions, static_shapes=True)
def check_max_intermediate_elements(programs: Sequence[ProgramInfo], *, below: Expr,
                                    hint: str = "") -> RuleOutcome:
    """Every value the program computes has fewer elements than `below` (an expression of the dims).

    For every program (one per input shape), the result of every op, nested loop bodies and
    called functions included, the outputs included and the inputs excepted, is sized from its
    static type (the product of its dimensions; a scalar is 1) and compared with `below`
    evaluated at that program's dims. A value whose size cannot be read fails."""
    parsed = _parse(programs)
    if isinstance(parsed, Unreadable):
        return RuleOutcome(False, parsed.message)
    largest, where = 0, None
    for item in parsed:
        p = item.program
        try:
            limit = below.value(p.dims)
        except (KeyError, ZeroDivisionError):
            return RuleOutcome(False, f"The size limit {below} cannot be evaluated for input "
                                      f"shapes {p.signature} (the program has no static shapes).")
        for _, op in _all_ops(item.module):
            for t in op.result_types():
                n = t.elements()
                if n is None or n >= limit:
                    return RuleOutcome(False, _too_big(op, t, n, below, limit, p, hint),
                                       region=region_of(item.module, [op], p))
                if n > largest or where is None:
                    largest, where = n, (item, op)
    return RuleOutcome(True, f"The largest intermediate has {largest} elements: fewer than "
                             f"{below} for every input shape.",
                       region=where and region_of(where[0].module, [where[1]], where[0].program))


def _too_big(op: Op, t: TensorType, n: int | None, below: Expr, limit: int,
             p: ProgramInfo, hint: str) -> str:
    shape = "x".join("?" if d is None else str(d) for d in t.dims) or "scalar"
    size = "an unknown number of" if n is None else f"{n}"
    return (f"For input shapes {_shapes(p)}, {op.name.removeprefix('stablehlo.')} produces a "
            f"{shape} {t.element} value with {size} elements; every intermediate must have "
            f"fewer than {below} = {limit}. {hint or DEFAULT_HINT}")
