"""`dot_types`: the product of two arguments is computed by dots of given element types, and only
by them (an int8 matmul accumulating in int32, not a float one, nor int32 arithmetic beside it).

Read from the verified exported program's inlined dataflow (`jaxjudge.analysis.dataflow`), with
constants folded (`jaxjudge.analysis.folding`). Over it:

- a value is **derived from** an argument when it is computed from the argument's data (any
  step: converted, scaled, summed, multiplied); never through its shape (sizes read with symbolic
  dimensions carry nothing), nor through what folding cuts (a value multiplied by 0, a `where`
  branch a constant predicate never takes);
- a dot *of the arguments* is a `dot_general`, `dot` or `convolution` whose one operand holds
  the first argument's values and whose other holds the second's (the arguments re-laid-out:
  reshaped, transposed, sliced, converted, concatenated, padded or masked by a `where`, not
  computed from); a dot with an identity matrix is none: it gives its other operand back and
  depends on it alone (`jaxjudge.analysis.identity`), even an identity masked out of b
  (`where(i == j, 1, where(i != j, 0, b))`);
- such a dot with the required element types *is* the product: its result counts as derived
  from neither argument, but from "the product". No other value reaching the outputs may be
  derived from both arguments (a float or int32 matmul, an elementwise multiply-and-sum,
  `(a + b) ** 2`, a dot of values computed from them), nor from the product and either
  argument (the product combined with a or b again), nor be a multiply, divide or dot with the
  product on two operands, or a power of it (the product multiplied by itself);
- and one such dot must reach the outputs, other than through a multiplication by 0.

So an honest program computes `a @ b` in the required types and then only scales, converts or
rearranges its result. A required dot whose operand holds an identity block beside the argument
(`a @ [b | I]`, found up through concatenations, updates and re-layouts) also returns copies
of the other operand: its result is derived from the product and from that argument, so
combining such copies again fails however it is done (a `prod` over a stacked axis, shifts and
selects, a table lookup, exp and log). Known limits: the analysis follows which values are
computed from which, not what they equal. A dot operand that is an identity the forms do not
evaluate and that holds no identity block they do (built row by row from one-hot rows at
computed positions) still holds "b's values", so such a dot turns a copy of a into "the
product"; combining it with a or b again fails, and so does multiplying two values of the
product together (a multiply, divide or dot with the product on two operands, or a power of
it), but such copies added and passed through exp or log are not caught. A value a
`while_loop` condition reads only through its trip count is not followed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import Field, model_validator

from jaxjudge.analysis.dataflow import (
    Budget,
    Graph,
    Kind,
    Step,
    TooComplex,
    build_graph,
    propagate,
)
from jaxjudge.analysis.exported import ProgramInfo, Region
from jaxjudge.analysis.folding import (
    Bits,
    fold_constants,
    live_nodes,
    make_transfer,
    make_value_transfer,
)
from jaxjudge.analysis.identity import FormValue, copies_of, find_forms, passes
from jaxjudge.analysis.parsed import Unreadable, parse_programs
from jaxjudge.analysis.region import noted, region_of
from jaxjudge.analysis.stablehlo import Op, ParseError, tensor_types
from jaxjudge.rules.outcome import RuleOutcome
from jaxjudge.rules.registry import RuleOptions, register

_ELEMENT = r"^(i|ui|f|bf)[0-9]{1,2}$|^i1$"
_PATH = r"^[A-Za-z_][A-Za-z0-9_.]*$"
_DOTS = frozenset({"stablehlo.dot_general", "stablehlo.dot", "stablehlo.convolution"})
_A, _B, _P = 1, 2, 4  # derived from a, from b, from a required dot (the product)
_AB = _A | _B
_PRODUCTS = frozenset({Kind.MULTIPLY, Kind.DIVIDE, Kind.CONTRACT})
Element = Annotated[str, Field(pattern=_ELEMENT)]


class DotTypesOptions(RuleOptions):
    args: tuple[Annotated[str, Field(pattern=_PATH)], Annotated[str, Field(pattern=_PATH)]] = (
        Field(description="input paths of the two matrices, e.g. [a, b]"))
    operands: tuple[Element, Element] = Field(
        description="MLIR element types of the two operands, e.g. [i8, i8]")
    result: Element = Field(description="MLIR element type of the result, e.g. i32")

    @model_validator(mode="after")
    def _two_arguments(self) -> DotTypesOptions:
        if self.args[0] == self.args[1]:
            raise ValueError("args must name two different inputs")
        return self


def _types(step: Step) -> tuple[list[str], list[str]]:
    """(operand element types, result element types) from the step's printed type."""
    head, _, tail = step.type.rpartition("->")
    return [t.element for t in tensor_types(head)], [t.element for t in tensor_types(tail)]


def _has_types(step: Step, operands: tuple[str, str], result: str) -> bool:
    ins, outs = _types(step)
    return sorted(ins[:2]) == sorted(operands) and outs == [result]


def _signature(step: Step) -> str:
    """"(i32, i32) -> i32" for messages ("" when the step has no printed type)."""
    ins, outs = _types(step)
    return f"({', '.join(ins)}) -> {', '.join(outs)}" if ins or outs else ""


class _Found:
    """What one program shows: how many required dots reach the outputs, and the first step (in
    program order) where values that must stay apart meet, in a value reaching the outputs."""

    def __init__(self) -> None:
        self.dots: list[Op | None] = []  # the required dots that reach the outputs
        self.mixed = False
        self.mixing: Step | None = None
        self.mixing_op: Op | None = None
        self.again = False  # the meeting step combines the product with a or b again
        self.squared = False  # the meeting step multiplies the product by the product
        self.bordered = False  # a dot of the product also returns copies of a or b


def _mixes(bits: int) -> bool:
    """Computed from both arguments, or from the product and either argument."""
    return bits & _AB == _AB or bool(bits & _P and bits & _AB)


def _squares(step: Step, derived: list[int]) -> bool:
    """A multiply, divide or dot with the product on both operands, or a power of it."""
    ops = step.operands
    if step.name == "stablehlo.power":
        return bool(ops) and bool(derived[ops[0]] & _P)
    return len(ops) >= 2 and bool(derived[ops[0]] & _P) and bool(derived[ops[1]] & _P)


MAX_BORDER_STEPS = 64  # re-layouts followed up from a dot's operand to an identity block


def _holds_identity(g: Graph, node: int, forms: list[FormValue]) -> bool:
    """Whether the value at `node` holds a (scaled, shifted) identity matrix among its values:
    found up through the steps that move values (a concatenation, an update, a re-layout)."""
    seen, stack = {node}, [node]
    producers = g.producers()
    while stack and len(seen) <= MAX_BORDER_STEPS:
        g.budget.spend()  # many products, each with a long chain: the grade's budget bounds it
        n = stack.pop()
        f = forms[n] if n < len(forms) else None
        if isinstance(f, tuple) and f[0] == "diag" and f[5] == 0 and f[4] not in (None, 0):
            return True
        for i, _pos in producers[n]:
            for o, r in g.steps[i].pass_sources():
                if r == n and o not in seen:
                    seen.add(o)
                    stack.append(o)
    return False


def _analyze(g: Graph, arg_paths: Sequence[str], args: tuple[str, str],
             operands: tuple[str, str], result: str, text: str) -> _Found:
    seeds: dict[int, int] = {}
    for node, path in zip(g.main_args, arg_paths, strict=True):
        for bit, name in ((_A, args[0]), (_B, args[1])):
            if path == name or path.startswith(name + "."):
                seeds[node] = seeds.get(node, 0) | bit
    values = fold_constants(g)  # for what must reach the outputs
    exact = fold_constants(g, exact=True)  # for what must not: `0.0 * x` may still be NaN
    # A product with the identity matrix (even one masked out of b) gives its other operand
    # back: a copy of it, that depends on nothing else (read from the exact folds).
    # the forms of the program's constant matrices, for the identity products and the
    # identity blocks below (found once, only for a program with a product)
    forms = find_forms(g, exact, text) if any(s.name in _DOTS for s in g.steps) else []
    found_passes = passes(g, exact, text, forms or None)
    gives = {k: p.node for k, p in found_passes.items()}
    # Holding an argument's values makes a dot the product: read with every fold, so that a
    # branch a folded predicate leaves out never makes one.
    held = propagate(g, seeds, make_value_transfer(values, copies_of(found_passes)))
    required: set[int] = set()  # id() of the steps that are the product
    for s in g.steps:
        if s.name not in _DOTS or len(s.operands) < 2 or len(s.results) != 1 or (
                id(s) in gives):
            continue
        lhs, rhs = held[s.operands[0]], held[s.operands[1]]
        if not ((lhs & _A and rhs & _B) or (lhs & _B and rhs & _A)):
            continue
        if _has_types(s, operands, result):
            required.add(id(s))
    base = make_transfer(exact, gives)
    # A product whose operand holds an identity block beside the argument (`[b | I]`) also
    # returns the other operand's values: those columns of `a @ [b | I]` are a itself.
    copied: dict[int, int] = {}
    for s in g.steps:
        if id(s) in required:
            bits = 0
            for side in (0, 1):
                if _holds_identity(g, s.operands[side], forms):
                    bits |= held[s.operands[1 - side]] & _AB
            copied[id(s)] = bits

    def transfer(step: Step, bits: Bits) -> list[int] | None:
        return [_P | copied[id(step)]] if id(step) in required else base(step, bits)

    derived = propagate(g, seeds, transfer)
    reached = live_nodes(g, values, g.main_results, gives)
    live = live_nodes(g, exact, g.main_results, gives)
    found = _Found()
    for s, op in zip(g.steps, g.ops, strict=True):
        if id(s) in required:
            if s.results[0] in reached:
                found.dots.append(op)
            found.bordered |= bool(copied[id(s)]) and s.results[0] in live
            continue
        if not any(_mixes(derived[r]) and r in live for r in s.results):
            continue
        found.mixed = True
        if found.mixing is None and s.name != "link" and not any(
                _mixes(derived[o]) for o in s.operands):
            found.mixing, found.mixing_op = s, op  # where they meet
            found.again = any(derived[o] & _P for o in s.operands)
    if not found.mixed:
        for s, op in zip(g.steps, g.ops, strict=True):  # the product times the product
            if (s.kind in _PRODUCTS or s.name == "stablehlo.power") and (
                    id(s) not in required and s.results and s.results[0] in live
                    and _squares(s, derived)):
                found.mixed, found.mixing, found.mixing_op, found.squared = True, s, op, True
                break
    return found


def _mixing(found: _Found, args: tuple[str, str], operands: tuple[str, str],
            result: str) -> str:
    """What the first meeting step does, for the failure message."""
    names, step = " and ".join(args), found.mixing
    if found.bordered:
        return (f"A dot of {names} with {operands[0]} x {operands[1]} operands also returns "
                f"copies of {args[0]} or {args[1]} (one operand holds an identity matrix "
                f"beside the matrix, as in {args[1]} joined with jnp.eye: those columns of the "
                f"result are the other matrix itself), and values computed from those copies "
                f"meet again outside the dot")
    if step is None:
        return (f"A value computed from both {args[0]} and {args[1]} reaches your outputs "
                f"other than through the product")
    sig = _signature(step)
    op = step.name.removeprefix("stablehlo.") + (f" ({sig})" if sig else "")
    dot = f"the result of the {operands[0]} x {operands[1]} -> {result} dot"
    if found.squared:
        return (f"A {op} multiplies the product ({dot}) by itself or by another such result "
                f"(or raises it to a power), and reaches your outputs")
    if found.again:
        return (f"A {op} combines the product ({dot}) with values computed from {args[0]} or "
                f"{args[1]} again, and reaches your outputs")
    if step.name in _DOTS and _has_types(step, operands, result):
        return (f"A matrix product {sig} multiplies values computed from {names} (not the "
                f"matrices themselves: converted, reshaped or sliced copies count, arithmetic "
                f"on them does not) and reaches your outputs")
    if step.name in _DOTS:
        return f"A matrix product of {names} takes and returns {sig}"
    return (f"A {op} combines values computed from {args[0]} and from {args[1]}, and its "
            f"result reaches your outputs")


@register("dot_types", "program", DotTypesOptions)
def check_dot_types(
    programs: Sequence[ProgramInfo], *, args: tuple[str, str], operands: tuple[str, str],
    result: str,
) -> RuleOutcome:
    """The product of the two arguments is computed by dots of the given types, and only by them.

    A dot (dot_general, dot or convolution) of the two arguments' values with those operand and
    result element types reaches the outputs (not multiplied by 0), and no other value computed
    from the data of both arguments does: a float or int32 matmul, an elementwise
    multiply-and-sum or any other arithmetic mixing them fails, even beside a real one, and so
    does combining the dot's result with either argument again; scaling, converting or
    rearranging the dot's result is free. A dot with an identity matrix copies its other
    operand (jaxjudge.analysis.identity). Shapes carry no dependence (see
    jaxjudge.rules.products)."""
    parsed = parse_programs(programs)
    if isinstance(parsed, Unreadable):
        return RuleOutcome(False, parsed.message)
    names = " and ".join(args)
    fix = (f"Multiply the quantized arrays themselves, e.g. jax.lax.dot_general(a, b, ..., "
           f"preferred_element_type=jnp.{_np(result)}), and only scale, convert or rearrange "
           f"its result.")
    budget = Budget()  # one for all of this grade's programs
    shown: Region | None = None
    for item in parsed:
        p = item.program
        try:
            g = build_graph(item.module)
            g.budget = budget
            budget.spend(len(g.steps))
            if len(g.main_args) != len(p.args) or len(g.main_results) != len(p.outs):
                return RuleOutcome(False, "The exported program could not be analyzed (its "
                                          "arguments or results do not match their paths).")
            found = _analyze(g, p.args, args, operands, result, p.text)
        except (ParseError, TooComplex) as exc:
            return RuleOutcome(False, f"The exported program for input shapes {p.signature} "
                                      f"could not be analyzed ({exc}).")
        wanted = f"{operands[0]} x {operands[1]} operands accumulating in {result}"
        if found.mixed:
            return RuleOutcome(False, (
                f"{_mixing(found, args, operands, result)}; the product of {names} must be "
                f"computed only by a dot_general with {wanted} (no float or int32 matmul, no "
                f"elementwise multiply-and-sum, even beside such a dot). {fix}"),
                region=region_of(item.module, [found.mixing_op], p) or noted(
                    p, f"a value computed from both {names} reaches the outputs"))
        if not found.dots:
            return RuleOutcome(False, (
                f"No matrix product of {names} with {wanted} reaches your outputs (none is "
                f"computed, or its result is discarded or multiplied by 0). {fix}"),
                region=noted(p, f"no {operands[0]} x {operands[1]} -> {result} dot of {names} "
                                f"reaches the outputs"))
        shown = shown or region_of(item.module, found.dots, p)
    return RuleOutcome(True, (
        f"The product of {names} is computed by a dot_general with {operands[0]} x "
        f"{operands[1]} operands accumulating in {result}, and nothing else mixes them."),
        region=shown)


def _np(element: str) -> str:
    """MLIR element type -> numpy name, for messages."""
    table = {"bf16": "bfloat16", "i1": "bool_"}
    if element in table:
        return table[element]
    kind = {"i": "int", "ui": "uint", "f": "float"}
    for prefix in ("ui", "i", "f"):
        if element.startswith(prefix):
            return kind[prefix] + element[len(prefix):]
    return element
