"""`low_precision_dots`: the matrix products of the named inputs run on low-precision operands.

Mixed-precision training keeps float32 master weights but runs the matmuls (forward and
backward) on bfloat16 or float16 copies. From the exported program alone, over its dataflow
(jaxjudge.analysis.flowpaths):

1. every matrix product reaching any output that reads an elementwise image of the inputs
   (an input converted, transposed or reshaped, or computed from them elementwise with
   constants and no other data: `-(-x)`, `x * 2 / 2`; a product with the identity matrix or a
   multiplication by 1 is a copy, not a product: jaxjudge.analysis.identity) takes operands of
   the allowed element types: an all-float32 model, a float32 product whose result is cast
   down afterwards, or values rounded through bfloat16 (directly, or through a bfloat16
   `@ jnp.eye(n)`, `* 1` or `-(-x)`) and converted back before a float32 product all fail;
2. at least one such product exists;
3. every way the inputs reach the named outputs passes through an allowed product or through
   arithmetic on the allowed types (a hand-written backward pass takes outer products as
   bfloat16 multiplications): a float32 matmul written as a multiply and a sum (no product at
   all), or values rounded through bfloat16 and back before float32 arithmetic, do not slip
   past (1); and no way they reach any other output (a training step's new parameters) sums
   over them in float32 outside those (a reduction or a contraction; the update `w - lr * g`
   takes them elementwise, which is free).

Products of other values (a float32 loss written as `r @ r`) are not constrained.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import Field

from jaxjudge.analysis.dataflow import Budget, Kind, Step, TooComplex
from jaxjudge.analysis.exported import Region
from jaxjudge.analysis.flowpaths import ELEMENT, PATH, Flow, flows, np_name, operand_elements
from jaxjudge.analysis.parsed import Unreadable
from jaxjudge.analysis.region import noted, region_of
from jaxjudge.analysis.stablehlo import tensor_types
from jaxjudge.analysis.words import listed
from jaxjudge.rules.outcome import RuleOutcome
from jaxjudge.rules.registry import RuleOptions, register

MAX_PATHS = 16
Path = Annotated[str, Field(pattern=PATH)]


class LowPrecisionDotsOptions(RuleOptions):
    operands: tuple[Annotated[str, Field(pattern=ELEMENT)], ...] = Field(
        min_length=1, max_length=8,
        description='allowed MLIR element types of both operands, e.g. ["bf16", "f16"]')
    inputs: tuple[Path, ...] = Field(
        min_length=1, max_length=MAX_PATHS,
        description="input paths whose products must be low precision, e.g. [x, params.w1]")
    outputs: tuple[Path, ...] = Field(
        default=(), max_length=MAX_PATHS,
        description="output paths (or prefixes) the inputs reach only through such products "
                    "(default: every output); every product of the inputs is checked, "
                    "whichever output it reaches")


@register("low_precision_dots", "program", LowPrecisionDotsOptions)
def check_low_precision_dots(
    programs: Sequence[object], *, operands: Sequence[str], inputs: Sequence[str],
    outputs: Sequence[str] = (),
) -> RuleOutcome:
    """The inputs reach the outputs only through matrix products on the allowed element types.

    Every product that reads a copy of an input, or a value computed from the inputs
    elementwise with constants and no other data (`-(-x)`; a product with the identity or
    `* 1` is a copy), takes allowed operands, at least one does, and no route from the inputs
    to the outputs avoids them (a matmul written as multiply-and-sum)."""
    parsed = flows(programs, Budget())  # type: ignore[arg-type]
    if isinstance(parsed, Unreadable):
        return RuleOutcome(False, parsed.message)
    allowed = set(operands)
    kinds = " or ".join(np_name(e) for e in operands)
    names = listed(list(inputs))
    fix = (f"Cast the parameters and the inputs to {np_name(operands[0])} before the matmuls "
           f"(x.astype(jnp.{np_name(operands[0])})), so that jax.grad's backward products run "
           f"on {np_name(operands[0])} too; keep only the loss, the gradients' unscaling and "
           f"the update in float32.")
    shown: Region | None = None
    for flow in parsed:
        try:
            why, where = _check(flow, allowed, inputs, outputs, kinds, names)
        except TooComplex as exc:
            return RuleOutcome(False, f"The exported program could not be analyzed ({exc}).")
        if why is not None:
            return RuleOutcome(False, f"{why} {fix}", region=where)
        shown = shown or where
    return RuleOutcome(True, f"Every matrix product of {names} takes {kinds} operands, and "
                             f"{names} reach the outputs only through such products.",
                       region=shown)


_LAYOUT = frozenset({Kind.PASS0, Kind.PASS_ALL, Kind.PASS_01, Kind.PASS_12, Kind.TUPLE})


def _allowed(step: Step, allowed: set[str]) -> bool:
    return all(e in allowed for e in operand_elements(step))


def _low_arithmetic(step: Step, allowed: set[str]) -> bool:
    """Arithmetic (not a copy, a cast or a selection) reading and producing allowed types."""
    if step.kind in _LAYOUT or not step.type:
        return False
    head, arrow, tail = step.type.rpartition("->")
    ins, outs = tensor_types(head), tensor_types(tail)
    return bool(arrow and outs and any(t.element in allowed for t in ins)
                and all(t.element in allowed for t in outs))


def _check(flow: Flow, allowed: set[str], inputs: Sequence[str], outputs: Sequence[str],
           kinds: str, names: str) -> tuple[str | None, Region | None]:
    """Why this program fails the rule (None: it passes), and the ops that decided it."""
    p = flow.program
    outs = flow.outputs(outputs)
    if not outs:
        return "The program has none of the outputs the requirement names.", None
    seeds = flow.seeds([inputs])
    reads = flow.computed_from(dict.fromkeys(seeds, 1))
    images = flow.images(seeds, reads)
    live = flow.live(node for _, node in outs)
    # a product with a matrix none of the inputs gives (a permutation, a 1x1 convolution, a
    # gate from other data) is a fixed linear map of its operand, an image of the inputs like
    # a copy: not one of their products, in whatever precision
    products = [s for s in flow.live_dots(live) if not flow.fixed_map(s, reads)]
    reading = [s for s in products if any(images[o] for o in s.operands[:2])]
    # (1) holds for every product of the inputs, whichever output it reaches: a training
    # step's returned parameters computed by a float32 pass beside the bf16 one that gives
    # the named gradients is a float32 product of them all the same
    every = flow.live(node for _, node in flow.outputs(()))
    bad = [s for s in flow.live_dots(every)
           if any(images[o] for o in s.operands[:2]) and not _allowed(s, allowed)
           and not flow.fixed_map(s, reads)]
    if bad:
        wrong = sorted({"(" + ", ".join(np_name(e) for e in operand_elements(s)) + ")"
                        for s in bad})
        return (f"A matrix product of {names} takes {' and '.join(wrong)} operands; every "
                f"product of them must take {kinds} operands (a float32 product cast down "
                f"afterwards, or a precision setting, does not count)."), region_of(
                    flow.module, flow.ops_of(bad), p)
    if not reading:
        return (f"No matrix product of {names} on {kinds} operands reaches the outputs.",
                noted(p, f"no {kinds} matrix product of {names} reaches the outputs"))
    cut = {id(s) for s in products if _allowed(s, allowed)}

    def low(s: Step) -> bool:
        # bf16 arithmetic that computes anew (a hand-written backward pass's outer products),
        # not arithmetic that only gives an image of the inputs back (`-(-x16)`, `x16 * 2`)
        return id(s) in cut or (_low_arithmetic(s, allowed) and not flow.is_copy(s)
                                and not any(images[r] for r in s.results))

    reached = flow.computed_from(seeds, low)
    leaks = [path for path, node in outs if reached[node]]
    if leaks:
        return (f"{leaks[0]} is computed from {names} without a {kinds} matrix product or "
                f"any {kinds} arithmetic on the way (a matmul written as a multiply and a "
                f"sum in float32 does not count)."), noted(
                    p, f"{leaks[0]} is computed from {names} in float32 only")
    # Any other output (a training step's parameters) may take the inputs elementwise (the
    # update w - lr * g), but not summed over them outside such products: that is a product
    # of them by another spelling (a float32 backward pass written as multiply and sum).
    summed = flow.summed_from(seeds, low)
    named = {node for _, node in outs}
    sums = [path for path, node in flow.outputs(()) if node not in named and summed[node]]
    if sums:
        return (f"{sums[0]} is computed from {names} by float32 arithmetic that sums over "
                f"them (a matmul written as a multiply and a sum, or a product of values "
                f"computed from them), outside the {kinds} matrix products: every product of "
                f"{names} must be {kinds}, whichever output it reaches."), noted(
                    p, f"{sums[0]} sums over {names} in float32")
    return None, region_of(flow.module, flow.ops_of(reading), p)
