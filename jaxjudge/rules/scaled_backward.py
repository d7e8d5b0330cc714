"""`scaled_backward`: the backward pass runs on values multiplied by the loss scale.

Loss scaling multiplies the loss by the scale *before* differentiating, so every cotangent of
the backward pass, and the matrix products that turn them into weight gradients, carry the
scale; the gradients are divided by it afterwards. Differentiating the plain loss and then
multiplying and dividing the gradients by the scale gives the same numbers where nothing
overflows, but protects nothing. From the exported program alone (jaxjudge.analysis.flowpaths):
some matrix product that reaches the outputs multiplies a value that grows with the scale (as
the scale to the power 1, jaxjudge.analysis.scaledegree: `loss_scale / loss_scale` is computed
from it but does not grow) by a copy of one of the `against` inputs (the input itself
converted, transposed or reshaped, not computed from the scale): in `dW1 = x^T @ delta1`, `x`
is a copy of an input and `delta1` carries the scale. A product of the scaled gradient with a
constant matrix, or a product that folding removes (multiplied by zero), does not count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import Field

from jaxjudge.analysis.dataflow import Budget, Step, TooComplex
from jaxjudge.analysis.exported import Region
from jaxjudge.analysis.flowpaths import PATH, Flow, flows
from jaxjudge.analysis.parsed import Unreadable
from jaxjudge.analysis.region import noted, region_of
from jaxjudge.analysis.scaledegree import exactly, scale_degrees, several
from jaxjudge.rules.outcome import RuleOutcome
from jaxjudge.rules.registry import RuleOptions, register

MAX_PATHS = 16
Path = Annotated[str, Field(pattern=PATH)]


class ScaledBackwardOptions(RuleOptions):
    scale: Path = Field(description="the input path of the loss scale, e.g. loss_scale")
    against: tuple[Path, ...] = Field(
        min_length=1, max_length=MAX_PATHS,
        description="input paths the backward products read, e.g. [x, params.w2]")
    outputs: tuple[Path, ...] = Field(
        default=(), max_length=MAX_PATHS,
        description="output paths (or prefixes) of the gradients (default: every output)")


@register("scaled_backward", "program", ScaledBackwardOptions)
def check_scaled_backward(
    programs: Sequence[object], *, scale: str, against: Sequence[str],
    outputs: Sequence[str] = (),
) -> RuleOutcome:
    """The scale reaches the gradients through the backward pass's matrix products.

    Some product reaching the outputs multiplies a value computed from the scale by a copy of
    one of the `against` inputs: the loss was scaled before differentiation."""
    parsed = flows(programs, Budget())  # type: ignore[arg-type]
    if isinstance(parsed, Unreadable):
        return RuleOutcome(False, parsed.message)
    names = ", ".join(against)
    shown: Region | None = None
    for flow in parsed:
        try:
            found = _scaled_products(flow, scale, against, outputs)
        except TooComplex as exc:
            return RuleOutcome(False, f"The exported program could not be analyzed ({exc}).")
        if isinstance(found, str):
            return RuleOutcome(False, found)
        shown = shown or region_of(flow.module, flow.ops_of(found), flow.program)
        if not found:
            message = (
                f"No matrix product of the backward pass carries {scale}: the gradients are "
                f"computed from the unscaled loss. Multiply the loss by {scale} inside the "
                f"function you differentiate (jax.grad(lambda p: loss(p) * {scale})), then "
                f"divide the gradients by it; scaling the gradients after jax.grad protects "
                f"nothing from overflow or underflow.")
            return RuleOutcome(False, message, region=noted(
                flow.program, f"no matrix product reaching the gradients reads {scale}"))
    return RuleOutcome(True, f"The backward pass's matrix products (of {names}) carry {scale}: "
                             f"the loss is scaled before differentiation.", region=shown)


def _scaled_products(flow: Flow, scale: str, against: Sequence[str],
                     outputs: Sequence[str]) -> list[Step] | str:
    """The live products that multiply a scaled value by a copy of an `against` input."""
    outs = flow.outputs(outputs)
    if not outs:
        return "The program has none of the outputs the requirement names."
    scale_seeds = flow.seeds([[scale]])
    if not scale_seeds:
        return f"The program does not read {scale}."
    scaled = flow.computed_from(scale_seeds)
    grows = scale_degrees(flow, list(scale_seeds), scaled)
    # x, w1, w2 as given or under a constant map (a permutation of the features): an honest
    # model may rearrange them, and its backward products read the rearrangement
    copies = flow.images(flow.seeds([against]))
    live = flow.live(node for _, node in outs)
    found, flat = [], []
    for step in flow.live_dots(live):
        a, b = step.operands[:2]
        for mine, other in ((a, b), (b, a)):
            if scaled[mine] and copies[other] and not scaled[other]:
                # an unknown power (a clip, a square root) proves nothing: not rejected
                (flat if exactly(grows[mine], 1) is False else found).append(step)
                break
    if found:
        for path, node in outs:
            # one backward pass gives each gradient one power of the scale (1, or 0 once
            # divided by it): a sum of an unscaled pass and a scaled one holds two
            if several(grows[node]):
                return (f"{path} does not come from one backward pass scaled by {scale}: it "
                        f"is a sum of terms that grow with different powers of {scale} (an "
                        f"unscaled backward pass beside a scaled one, or {scale} added to a "
                        f"constant), so the scale does not protect it. Multiply the whole "
                        f"loss by {scale} inside the function you differentiate, then divide "
                        f"the gradients by it.")
    if flat and not found:
        return (f"The backward pass's matrix products read values computed from {scale}, "
                f"but none grows with it: each holds another power of {scale} ({scale} / {scale} "
                f"is 1, 1 / {scale} shrinks), so the backward pass runs unscaled. Multiply the "
                f"loss by {scale} itself inside the function you differentiate "
                f"(jax.grad(lambda p: loss(p) * {scale})), then divide the gradients by it.")
    return found
