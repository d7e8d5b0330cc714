"""Input-to-output questions over an exported program's dataflow, for the precision rules.

Which values are plain copies of an input (converted, transposed, reshaped, sliced: no
arithmetic), which values are computed from an input, which matrix products reach the outputs.
Dependence is read as in `jaxjudge.analysis.loops`: constants are folded over the inlined program,
so a value multiplied by zero, or left out by a `where` on a constant, depends on nothing. A step
that gives its operand back (a product with the identity matrix, `x * 1`, `x + 0`: see
`jaxjudge.analysis.identity`) is a copy of it, not a product nor arithmetic, and depends only on it.
A dimension's size read from an input (`get_dimension_size`, how a shape-polymorphic program sees
B) is the input's shape, not its values, so it carries no dependence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from jaxjudge.analysis.dataflow import (
    Budget,
    Graph,
    Kind,
    Step,
    TooComplex,
    build_graph,
    pass_transfer,
    propagate,
)
from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.analysis.folding import Value, fold_constants, live_nodes, make_transfer
from jaxjudge.analysis.identity import copies_of, passes
from jaxjudge.analysis.parsed import MAX_TOTAL_CHARS, Unreadable
from jaxjudge.analysis.stablehlo import Module, Op, ParseError, parse_module, tensor_types
from jaxjudge.analysis.stepslices import ELEMENTWISE

DOTS = frozenset({"stablehlo.dot_general", "stablehlo.dot", "stablehlo.convolution"})
SHAPE_ONLY = frozenset({"stablehlo.get_dimension_size"})
_SUMMING = frozenset({Kind.REDUCE, Kind.CONTRACT})  # steps that sum over their operands
_ARITHMETIC = frozenset({Kind.ADD, Kind.NEGATE, Kind.MULTIPLY, Kind.DIVIDE})
PATH = r"^[A-Za-z_][A-Za-z0-9_.]*$"
ELEMENT = r"^(i|ui|f|bf)[0-9]{1,2}$|^i1$"


def matches(path: str, names: Iterable[str]) -> bool:
    """`path` is one of `names` or lies under one of them ("params" covers "params.w1")."""
    return any(path == n or path.startswith(n + ".") for n in names)


@dataclass
class Flow:
    """One program's inlined dataflow with its folded constants."""

    program: ProgramInfo
    graph: Graph
    values: list[Value]
    module: Module
    gives: dict[int, int]  # id() of a step that gives an operand back -> that operand

    def ops_of(self, steps: Iterable[Step]) -> list[Op | None]:
        """The ops the steps came from (for the report's excerpt)."""
        index = {id(s): i for i, s in enumerate(self.graph.steps)}
        return [self.graph.ops[index[id(s)]] if id(s) in index else None for s in steps]

    def seeds(self, groups: Sequence[Sequence[str]]) -> dict[int, int]:
        """main's argument nodes -> bit i for every group i of input paths they belong to."""
        out: dict[int, int] = {}
        for node, path in zip(self.graph.main_args, self.program.args, strict=True):
            for bit, names in enumerate(groups):
                if matches(path, names):
                    out[node] = out.get(node, 0) | (1 << bit)
        return out

    def outputs(self, prefixes: Sequence[str]) -> list[tuple[str, int]]:
        """(output path, node) of main's results under the prefixes (all when empty)."""
        return [(path, node) for node, path in zip(self.graph.main_results, self.program.outs,
                                                   strict=True)
                if not prefixes or matches(path, prefixes)]

    def copies(self, seeds: dict[int, int]) -> list[int]:
        """Bits of the values that are an input's own values re-laid-out (no arithmetic, or
        only arithmetic that gives them back)."""
        gives = self.gives

        def transfer(step: Step, bits: list[int]) -> list[int] | None:
            given = gives.get(id(step))
            return [bits[given]] if given is not None else pass_transfer(step, bits)

        return propagate(self.graph, seeds, transfer)

    def fixed_map(self, step: Step, reads: list[int]) -> bool:
        """A product one of whose two operands is not computed from the inputs `reads` marks
        (`computed_from` of them): a fixed linear map (a permutation, a reversal, a 1x1
        convolution with a constant kernel, a matrix built from other data) applied to the
        other, not a product of those inputs."""
        return (step.name in DOTS and len(step.operands) >= 2
                and any(not reads[o] for o in step.operands[:2]))

    def images(self, seeds: dict[int, int], reads: list[int] | None = None) -> list[int]:
        """Bits of the values computed from the seeded inputs with nothing else of them
        (`-(-x)`, `x * 2 / 2`, `tanh(x)`, `x @ P` for a P that none of them gives, `x` times a
        gate computed from other data): the copies, what an elementwise step or a product
        makes of them when its every other operand is computed from none of the seeded
        inputs (a value mixed with a product of them, or with another of them, is none).
        reads: `computed_from` of the same inputs, when the caller has it."""
        if reads is None:
            reads = self.computed_from(dict.fromkeys(seeds, 1))
        gives, values = self.gives, self.values

        def transfer(step: Step, bits: list[int]) -> list[int] | None:
            given = gives.get(id(step))
            if given is not None:
                return [bits[given]]
            elementwise = step.kind in _ARITHMETIC or step.name in ELEMENTWISE
            if elementwise or self.fixed_map(step, reads):
                if not step.results or values[step.results[0]] is not None:
                    return None
                acc = 0
                for o in step.operands[:2] if step.name in DOTS else step.operands:
                    if bits[o]:
                        acc |= bits[o]
                    elif reads[o]:
                        return None
                return [acc] * len(step.results) if acc else None
            return pass_transfer(step, bits)

        return propagate(self.graph, seeds, transfer)

    def is_copy(self, step: Step) -> bool:
        """A step that gives an operand back (see `jaxjudge.analysis.identity`)."""
        return id(step) in self.gives

    def computed_from(self, seeds: dict[int, int],
                      cut: Callable[[Step], bool] = lambda _s: False,
                      summing: int | None = None) -> list[int]:
        """Bits of the values computed from the seeded inputs, not through the `cut` steps.
        summing: a bit no seed has, that a value takes on when a reduction or a contraction
        computes it from them (see `summed_from`)."""
        folded = make_transfer(self.values, self.gives)

        def transfer(step: Step, bits: list[int]) -> list[int] | None:
            if step.name in SHAPE_ONLY or cut(step):
                return None
            out = folded(step, bits)
            if summing is not None and out is not None and step.kind in _SUMMING:
                out = [b | summing if b else b for b in out]
            return out

        return propagate(self.graph, seeds, transfer)

    def summed_from(self, seeds: Iterable[int],
                    cut: Callable[[Step], bool] = lambda _s: False) -> list[bool]:
        """Per node, whether it is computed from the seeded inputs through a step that sums
        over them (a reduction or a contraction), not through the `cut` steps: a product by
        any spelling, as opposed to elementwise work (an update `w - lr * g`)."""
        bits = self.computed_from(dict.fromkeys(seeds, 1), cut, summing=2)
        return [bool(b & 2) for b in bits]

    def live(self, nodes: Iterable[int]) -> set[int]:
        return live_nodes(self.graph, self.values, list(nodes), self.gives)

    def live_dots(self, live: set[int]) -> list[Step]:
        """Matrix products whose result reaches `live` and is not a folded constant, nor a copy
        (a product with the identity matrix)."""
        return [s for s in self.graph.steps if s.name in DOTS and len(s.operands) >= 2
                and s.results and s.results[0] in live and self.values[s.results[0]] is None
                and id(s) not in self.gives]


def operand_elements(step: Step) -> list[str]:
    """The element types of a product's two operands ("?" when unreadable)."""
    head, arrow, _ = step.type.rpartition("->")
    found = [t.element for t in tensor_types(head)[:2]] if arrow else []
    return found if len(found) == 2 else ["?", "?"]


def flows(programs: Sequence[ProgramInfo], budget: Budget) -> list[Flow] | Unreadable:
    """Every program's dataflow, or an `Unreadable` saying why the rule cannot run."""
    if not isinstance(programs, Sequence) or isinstance(programs, str | bytes) or not programs:
        return Unreadable("No exported program was available to check.")
    if not all(isinstance(p, ProgramInfo) and isinstance(p.text, str) for p in programs):
        return Unreadable("The exported programs are malformed and could not be checked.")
    total = sum(len(p.text) for p in programs)
    if total > MAX_TOTAL_CHARS:
        return Unreadable(
            f"The exported programs are too large to verify ({total >> 20} MiB of StableHLO; "
            f"at most {MAX_TOTAL_CHARS >> 20} MiB are analyzed): remove dead computations.")
    out = []
    for p in programs:
        try:
            module = parse_module(p.text)
            g = build_graph(module)
            g.budget = budget
            budget.spend(len(g.steps))
            if len(g.main_args) != len(p.args) or len(g.main_results) != len(p.outs):
                return Unreadable("The exported program could not be analyzed (its "
                                  "arguments or results do not match their paths).")
            values = fold_constants(g)
            out.append(Flow(p, g, values, module, copies_of(passes(g, values, p.text))))
        except (ParseError, TooComplex) as exc:
            return Unreadable(f"The exported program for input shapes {p.signature} "
                              f"could not be analyzed ({exc}).")
    return out


def np_name(element: str) -> str:
    """MLIR element type -> the numpy name, for messages."""
    table = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "f64": "float64",
             "i1": "bool"}
    return table.get(element, element)
