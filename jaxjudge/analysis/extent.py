"""How large a value a program computes from some of its inputs: the largest live one.

"x is padded to its bucket, not further" is a statement about sizes, whatever the shapes: a
copy of x padded to 16 holds 16 positions folded to 4 x 4, bitcast, sliced into four pieces,
built by a loop or joined to a marker. So the figure is the element count of the largest value
computed from the named inputs (through any op, index reads included) that reaches an output,
read from a program with static shapes; a rule compares it with the same figure of the
problem's reference at the same shapes (`jaxjudge.rules.programs_per_bucket`). Dependence and
liveness are read as everywhere (`jaxjudge.analysis.flowpaths`): folded constants cut them, so
a value multiplied by zero or a dead buffer beside the work counts for nothing. A value read
only by slices and gathers counts what they take of it: a buffer of the largest bucket sliced
back to the bucket before any computation holds the bucket, four slices of it hold it all.
Sizes are per op, not per execution: a loop that walks 16 positions one small value at a time
holds small values (a known limit: the loop rules count steps).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jaxjudge.analysis.dataflow import Budget, Step, build_graph, propagate
from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.analysis.flowpaths import matches
from jaxjudge.analysis.folding import fold_constants, live_nodes, make_transfer
from jaxjudge.analysis.stablehlo import Module, Op, tensor_types

# Ops that take part of their operand (its other operands are indices).
CUTS = frozenset({"stablehlo.slice", "stablehlo.dynamic_slice", "stablehlo.real_dynamic_slice",
                  "stablehlo.gather", "stablehlo.dynamic_gather"})


def _elements(step: Step) -> int | None:
    _, arrow, tail = step.type.rpartition("->")
    types = tensor_types(tail) if arrow else []
    return types[0].elements() if len(types) == 1 else None


@dataclass(frozen=True)
class Extent:
    """The largest live value computed from the inputs: its elements, shape and op."""

    elements: int
    shape: tuple[int, ...] = ()
    op: Op | None = None


def largest_from(program: ProgramInfo, module: Module, paths: Sequence[str],
                 budget: Budget) -> Extent | None:
    """The program's largest live value computed from the inputs under `paths` (an Extent of
    0 elements when none reaches an output); None when a size is not static (a symbolic
    program). Raises ParseError or TooComplex like the other analyses."""
    g = build_graph(module)
    g.budget = budget
    budget.spend(len(g.steps))
    seeds = {node: 1 for node, path in zip(g.main_args, program.args, strict=False)
             if matches(path, paths)}
    values = fold_constants(g)
    bits = propagate(g, seeds, make_transfer(values))
    live = live_nodes(g, values, list(g.main_results))
    consumers = g.consumers()
    best = Extent(0)
    for i, step in enumerate(g.steps):
        if not any(bits[r] and r in live for r in step.results):
            continue
        op = g.ops[i] if g.ops[i] is not None else g.region_ops.get(i)
        _, arrow, tail = step.type.rpartition("->")
        # a region op's step (a scatter, a reduction) carries no type: its op's
        types = tensor_types(tail) if arrow else op.result_types() if op is not None else []
        for r, t in zip(step.results, types, strict=False):
            if not bits[r] or r not in live:
                continue
            n = t.elements()
            if n is None:
                return None
            readers = [g.steps[k] for k in consumers[r]]
            if readers and all(c.name in CUTS for c in readers):
                # a cut whose size is not written (a dynamic result type) takes it all
                taken = [_elements(c) for c in readers]
                n = n if None in taken else min(n, sum(taken))  # type: ignore[arg-type]
            if n > best.elements:
                best = Extent(n, tuple(d or 0 for d in t.dims), op)
    return best
