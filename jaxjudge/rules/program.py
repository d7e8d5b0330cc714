"""Program-level rule: the exported program really rematerializes the activation.

The spec-level rule reads what the submission *says* it asked JAX to do (stage A, untrusted);
this one reads what the exported program *does*, and it alone decides. It proves, from the
program's dataflow (`jaxjudge.analysis.dataflow`), that the gradient outputs read an activation that
was recomputed from the *saved* product and never read a saved forward one:

- x-values and W1-values are the two `product` arguments and anything computed from them
  elementwise; a product is a matmul of an x-value and a W1-value;
- the candidates are every nonlinear step computed from a product through elementwise steps
  (the `activation` op, but also exp, clamp, z * z...: any saved nonlinear function of the
  product counts, however it is spelled);
- a candidate's *values* are what elementwise steps compute from it (a clamped or scaled copy
  is still it); its *continuation* is what it feeds through a contraction (h @ W2, sums): its
  forward use; `fwd(T)` is everything computed from that, the cotangent included;
- the backward pass *reads* R *against* F when a step combines a value of R with `fwd(F)`.

Rules, in order:

1. no candidate is read against its own continuation (a saved forward value reused by the
   backward pass: no checkpoint, `everything_saveable`, a checkpoint outside the gradient or
   around the activation alone, a disguised or duplicated forward activation beside a decoy);
2. every candidate read against another is fed only by products the forward pass also uses,
   and shares one with a candidate it is read against (the product is saved, not recomputed:
   `nothing_saveable`, no policy, whatever a decoy does beside it);
3. some `activation` R is read against a forward F of the same product, and reaches a gradient
   output and no `primal` output (it exists for the backward pass only).

Loops are analysed with their iterations merged (one node per loop-carried value), which can
only add dependences, so rules 1-2 stay sound; a step that multiplies a value of T by something
computed from T along another path (a loop-carried cotangent) is T's derivative at work, not a
value of T. The work is a fixed number of linear passes over the inlined program (bit sets, one
bit per candidate), with candidates, inlined ops, loop passes and read bookkeeping capped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field

from jaxjudge.analysis.dataflow import (
    Budget,
    Graph,
    Kind,
    Step,
    TooComplex,
    ancestors,
    build_graph,
    elementwise_transfer,
    full_transfer,
    propagate,
)
from jaxjudge.analysis.exported import ProgramInfo, Region
from jaxjudge.analysis.folding import fold_constants
from jaxjudge.analysis.identity import passes
from jaxjudge.analysis.observed_activation import FED, LOCAL, recomputed
from jaxjudge.analysis.parsed import MAX_TOTAL_CHARS
from jaxjudge.analysis.region import region_of
from jaxjudge.analysis.stablehlo import ParseError, parse_module, tensor_types
from jaxjudge.rules.outcome import RuleOutcome
from jaxjudge.rules.registry import RuleOptions, register

MAX_PROGRAMS = 64
MAX_ACTIVATIONS = 64  # nonlinear ops computed from the product, per program (2-4 in real code)
_PRODUCT_OPS = frozenset({"stablehlo.dot_general", "stablehlo.dot"})
# Steps that only move values around: they do not combine an activation with anything.
_NOT_READS = frozenset(
    {Kind.PASS0, Kind.PASS_ALL, Kind.PASS_01, Kind.PASS_12, Kind.TUPLE, Kind.STRUCTURAL}
)

FindingKind = Literal[
    "ok", "parse_error", "too_large", "no_product", "no_activation", "saved_read", "recomputed",
    "not_recomputed",
]


@dataclass
class ProgramFinding:
    """What the dataflow analysis found in one program (tests assert on `kind`)."""

    signature: str
    kind: FindingKind
    products: int = 0  # products feeding a live activation
    activations: int = 0  # live activations fed by a product
    detail: str = ""
    reads: dict[int, list[int]] = field(default_factory=dict)  # activation -> read against
    shown: list[Step] = field(default_factory=list)  # the activations the finding is about
    region: Region | None = None  # where they are in the program (for the report)


def _bits(value: int) -> list[int]:
    out = []
    while value:
        low = value & -value
        out.append(low.bit_length() - 1)
        value ^= low
    return out


def _matches(path: str, prefixes: Sequence[str]) -> bool:
    return any(path == p or path.startswith(p + ".") for p in prefixes)


# Steps that combine values arithmetically: where a saved activation can be "read".
_READS = frozenset(
    {Kind.ADD, Kind.MULTIPLY, Kind.DIVIDE, Kind.CONTRACT, Kind.REDUCE, Kind.OTHER}
)
MAX_READ_WORK = 4_000_000  # bit iterations while collecting reads (a deterministic time bound)


class _Analysis:
    """The propagations of one program, in the order the module docstring defines them."""

    def __init__(self, g: Graph, activation: str) -> None:
        self.g = g
        self.activation = activation

    def products(self, a_nodes: list[int], b_nodes: list[int]) -> tuple[list[int], list[int]]:
        """(dot products of a-values and b-values, origin bits per node: 1 a, 2 b)."""
        seeds: dict[int, int] = {}
        for n in a_nodes:
            seeds[n] = seeds.get(n, 0) | 1
        for n in b_nodes:
            seeds[n] = seeds.get(n, 0) | 2
        origin = propagate(self.g, seeds, elementwise_transfer)
        found = []
        for s in self.g.steps:
            if s.name in _PRODUCT_OPS and len(s.operands) >= 2 and s.results:
                lhs, rhs = origin[s.operands[0]], origin[s.operands[1]]
                if (lhs & 1 and rhs & 2) or (lhs & 2 and rhs & 1):
                    found.append(s.results[0])
        return found, origin

    def candidates(self, products: list[int], origin: list[int]) -> list[tuple[Step, int]]:
        """Nonlinear steps computed from x and W1 (the activation and anything like it), with
        the bit set of the products feeding each through elementwise steps."""
        seeds: dict[int, int] = {}
        for i, p in enumerate(products):
            seeds[p] = seeds.get(p, 0) | (1 << i)
        fed = propagate(self.g, seeds, elementwise_transfer)
        # Values computed from some other contraction (a cotangent, h @ W2): a product of two
        # such values is a derivative at work in the backward pass, not a forward activation.
        product_set = set(products)
        mixed = propagate(self.g, {
            r: 1 for s in self.g.steps if s.kind in (Kind.CONTRACT, Kind.REDUCE)
            for r in s.results if r not in product_set
        }, full_transfer)
        out = []
        for s in self.g.steps:
            if not s.results or not s.operands:
                continue
            pure = sum(1 for o in s.operands if fed[o] and not mixed[o])
            if s.kind is Kind.OTHER or (
                s.kind in (Kind.MULTIPLY, Kind.DIVIDE) and pure >= 2
            ):
                # A nonlinear function of the product (tanh, exp, z * z, 1 / (1 + e)...).
                feeders = 0
                both = 0
                for o in s.operands:
                    feeders |= fed[o]
                    both |= origin[o]
                if feeders or (both & 3) == 3:
                    out.append((s, feeders))
        return out

    def reads(self, acts: list[Step]) -> list[int]:
        """reads[i]: bit set of the candidates whose continuation candidate i is read against."""
        g = self.g
        seeds = {}
        for i, s in enumerate(acts):
            for r in s.results:
                seeds[r] = seeds.get(r, 0) | (1 << i)
        down = propagate(g, seeds, full_transfer)

        def values_of(step: Step, bits: list[int]) -> list[int] | None:
            """Elementwise, except that T times something computed from T along another path
            (a cotangent that came back through a loop carry, T * (1 - T) * g) is T's
            derivative at work, not a value of T; T * (1 - T) still is one. Without this,
            loop-carried cotangents would make every recomputed tanh read against itself."""
            ops = step.operands
            if step.kind in (Kind.MULTIPLY, Kind.DIVIDE) and len(ops) == 2:
                a, b = ops
                out = (bits[a] & (~down[b] | bits[b])) | (bits[b] & (~down[a] | bits[a]))
                return [out] * len(step.results)
            return elementwise_transfer(step, bits)

        direct = propagate(g, seeds, values_of)
        cont: dict[int, int] = {}
        for s in g.steps:
            if s.kind not in (Kind.CONTRACT, Kind.REDUCE):
                continue
            acc = 0
            for i, u in enumerate(s.operands):
                others = 0
                for j, v in enumerate(s.operands):
                    if j != i:
                        others |= down[v]
                acc |= direct[u] & ~others
            if acc:
                for r in s.results:
                    cont[r] = cont.get(r, 0) | acc
        fwd = propagate(g, cont, full_transfer)
        reads = [0] * len(acts)
        work = MAX_READ_WORK  # separate: bits per step, not steps (g.budget counts steps)
        for s in g.steps:
            ops = s.operands
            if s.kind not in _READS or len(ops) < 2:
                continue
            n = len(ops)
            prefix = [0] * (n + 1)
            suffix = [0] * (n + 1)
            for i in range(n):
                prefix[i + 1] = prefix[i] | fwd[ops[i]]
                suffix[n - 1 - i] = suffix[n - i] | fwd[ops[n - 1 - i]]
            for i, u in enumerate(ops):
                mine = direct[u]
                against = prefix[i] | suffix[i + 1]
                if not mine or not against:
                    continue
                for t in _bits(mine):
                    reads[t] |= against
                    work -= 1
                if work < 0:
                    raise TooComplex("too many activation values are combined")
        return reads


def _size_one_reduce(g: Graph, i: int) -> bool:
    """Whether region step `i` is a one-operand `stablehlo.reduce` over dimensions of size 1
    only: each result element is its body applied to the init value and one operand element,
    so the result is the operand re-laid-out (what `h[None].sum(0)` or `h.max(axis)` over a
    length-1 axis gives back), not a sum of it."""
    op, step = g.region_ops.get(i), g.steps[i]
    if op is None or op.name != "stablehlo.reduce" or len(step.operands) != 2:
        return False
    types = tensor_types(op.type)
    if len(types) != 3:  # (operand, init) -> result
        return False
    # Every dimension removed is a 1: what is left of the operand's shape, 1s set aside, is
    # the result's (a removed dynamic or longer dimension would leave one more entry).
    if (None,) in (types[0].dims, types[2].dims):  # a shape that could not be read
        return False
    kept = [d for d in types[0].dims if d != 1]
    return kept == [d for d in types[2].dims if d != 1] and (
        len(types[0].dims) > len(types[2].dims))


def _give_back_operands(g: Graph, text: str) -> None:
    """Rewrite, in place, the steps that give an operand back as copies of it (`Kind.PASS0`),
    so that a forward value passed through one is still that value: a reduce over axes of
    size 1, and what `jaxjudge.analysis.identity` finds (a product with an identity matrix built
    from iota or a literal, `x * 1`, `x + 0` on folded constants). Without it, `h[None].sum(0)`
    or `h @ jnp.eye(H)` would turn the saved tanh into its own continuation (a contraction)."""
    found = passes(g, fold_constants(g, exact=True), text)
    for i, step in enumerate(g.steps):
        src = None
        if step.kind is Kind.REDUCE and _size_one_reduce(g, i):
            src = step.operands[0]
        elif id(step) in found:
            src = found[id(step)].node
        if src is not None:
            g.steps[i] = Step(Kind.PASS0, step.name, (src,), step.results, step.type)
    g._consumers = g._producers = None


def analyze_program(
    program: ProgramInfo,
    *,
    activation: str,
    product: Sequence[str],
    primal: Sequence[str] = ("loss",),
    gradients: Sequence[str] = ("grads",),
    budget: Budget | None = None,
) -> ProgramFinding:
    """Classify one program. Never raises on hostile input: returns kind "parse_error" (or
    "too_large" once `budget`, shared by all of a grade's programs, runs out)."""
    budget = budget or Budget()
    sig = program.signature if isinstance(program.signature, str) else "?"
    act = activation if "." in activation else f"stablehlo.{activation}"
    try:
        for name, paths in (("argument", program.args), ("output", program.outs)):
            if not isinstance(paths, list) or not all(isinstance(a, str) for a in paths):
                raise ParseError(f"the {name} list is malformed")
        module = parse_module(program.text)
        g = build_graph(module)
        g.budget = budget
        budget.spend(len(g.steps))
        _give_back_operands(g, program.text)
    except TooComplex as exc:
        return ProgramFinding(sig, "too_large", detail=str(exc))
    except ParseError as exc:
        return ProgramFinding(sig, "parse_error", detail=str(exc))
    except (ValueError, TypeError, KeyError, IndexError, RecursionError, MemoryError) as exc:
        # Defensive: the caps and checks above should make these unreachable.
        return ProgramFinding(sig, "parse_error", detail=type(exc).__name__)
    for what, nodes, paths in (("arguments", g.main_args, program.args),
                               ("results", g.main_results, program.outs)):
        if len(nodes) != len(paths):
            detail = f"main has {len(nodes)} {what} but {len(paths)} paths were given"
            return ProgramFinding(sig, "parse_error", detail=detail)
    try:
        finding = _classify(g, program, sig, act, product, primal, gradients)
    except TooComplex as exc:
        return ProgramFinding(sig, "too_large", detail=str(exc))
    if finding.shown:
        wanted = {id(s) for s in finding.shown}
        ops = [op for s, op in zip(g.steps, g.ops, strict=True) if id(s) in wanted]
        finding.region = region_of(module, ops, program)
    return finding


def _classify(
    g: Graph, program: ProgramInfo, sig: str, act: str, product: Sequence[str],
    primal: Sequence[str], gradients: Sequence[str],
) -> ProgramFinding:
    an = _Analysis(g, act)
    a_nodes = [n for n, p in zip(g.main_args, program.args, strict=True) if p == product[0]]
    b_nodes = [n for n, p in zip(g.main_args, program.args, strict=True) if p == product[1]]
    products, origin = an.products(a_nodes, b_nodes)
    outs = list(zip(g.main_results, program.outs, strict=True))
    live = ancestors(g, [n for n, _ in outs])
    found = [(s, f) for s, f in an.candidates(products, origin) if s.results[0] in live]
    is_act = [s.name == act for s, _ in found]
    if not products:
        return ProgramFinding(sig, "no_product")
    if not any(is_act[i] and found[i][1] for i in range(len(found))):
        return ProgramFinding(sig, "no_activation", products=len(products))
    if len(found) > MAX_ACTIVATIONS:
        return ProgramFinding(sig, "too_large", detail=(
            f"{len(found)} nonlinear ops are computed from the product "
            f"(at most {MAX_ACTIVATIONS} are analyzed)"))
    acts = [s for s, _ in found]
    feeders = [f for _, f in found]
    reads = an.reads(acts)
    used = 0
    for i, f in enumerate(feeders):
        if is_act[i]:
            used |= f
    finding = ProgramFinding(
        sig, "ok", products=len(_bits(used)), activations=sum(is_act),
        reads={i: _bits(r) for i, r in enumerate(reads) if r},
    )
    # 1. No saved forward value of the product's nonlinearity is read by the backward pass.
    saved = [i for i in range(len(acts)) if reads[i] >> i & 1]
    if saved:
        finding.kind = "saved_read"
        partly = any(is_act[r] and feeders[r] & feeders[i] and (reads[r] >> i & 1)
                     for i in saved for r in range(len(acts)) if r != i)
        finding.detail = "partly" if partly else ""
        finding.shown = [acts[i] for i in saved]
        return finding
    # 2. What the backward pass reads is recomputed from products the forward pass computed:
    #    every read activation is fed only by such products, and shares one with the forward
    #    value it is read against.
    backward = [i for i in range(len(acts)) if reads[i] & ~(1 << i)]
    forward_products = 0
    for i in range(len(acts)):
        if i not in backward:
            forward_products |= feeders[i]
    for i in backward:
        shares = any(feeders[i] & feeders[j] for j in _bits(reads[i] & ~(1 << i)))
        if not shares or feeders[i] & ~forward_products:
            finding.kind = "recomputed"
            finding.shown = [acts[i]]
            return finding
    # 3. Some activation recomputed from the saved product is read against the forward one,
    #    and serves the gradients only.
    primal_anc = ancestors(g, [n for n, p in outs if _matches(p, primal)])
    grad_anc = ancestors(g, [n for n, p in outs if _matches(p, gradients)])
    for r in backward:
        node = acts[r].results[0]
        if is_act[r] and node not in primal_anc and node in grad_anc:
            finding.shown = [acts[j] for j in _bits(reads[r] & ~(1 << r))] + [acts[r]]
            return finding
    finding.kind = "not_recomputed"
    finding.shown = [acts[i] for i in backward]
    return finding


def _display(path: str) -> str:
    """Turn "params.w1" into "params['w1']", as a learner writes it."""
    head, *keys = path.split(".")
    return head + "".join(f"[{k!r}]" for k in keys)


def _message(f: ProgramFinding, *, activation: str, product: Sequence[str], policy: str) -> str:
    act = activation.removeprefix("stablehlo.")
    prod = f"{_display(product[0])} @ {_display(product[1])}"
    fix = (
        f"wrap the block in jax.checkpoint(..., policy=jax.checkpoint_policies.{policy}) "
        "inside the function you pass to jax.grad/jax.value_and_grad"
    )
    if f.kind == "ok":
        return (
            f"The backward pass recomputes the {act} from the saved product {prod} and never "
            f"reads the forward {act}."
        )
    if f.kind == "parse_error":
        return (
            f"The exported program could not be analyzed ({f.detail}), so the "
            f"{act} rematerialization cannot be confirmed."
        )
    if f.kind == "too_large":
        return (
            f"The exported program is too large or too convoluted to verify ({f.detail}), so "
            f"the {act} rematerialization cannot be confirmed: keep the block a plain "
            f"{act}({prod} + bias) under one jax.checkpoint."
        )
    if f.kind == "no_product":
        return (
            f"No matrix product of {_display(product[0])} and {_display(product[1])} was found "
            f"in the exported program: compute the pre-activation with a matmul "
            f"({prod}, jnp.dot or jnp.einsum) so {policy} can save it."
        )
    if f.kind == "no_activation":
        return (
            f"{prod} is computed but no {act} is applied to it (directly or after adding the "
            f"bias) on the way to your outputs: compute the activation with jnp.{act} on "
            f"{prod} plus the bias."
        )
    if f.kind == "recomputed":
        return (
            f"The backward pass recomputes {prod} too, instead of recomputing only the {act} "
            f"from the saved product (a policy that saves no matmul result, such as "
            f"nothing_saveable or no policy, does this). Use "
            f"policy=jax.checkpoint_policies.{policy}: {fix}."
        )
    if f.kind == "saved_read" and f.detail == "partly":
        return (
            f"The backward pass recomputes the {act} for its own derivative, but still reads the "
            f"forward {act} of {prod} elsewhere (typically for the matmul that follows it, "
            f"whose weight gradient needs the activation): put the whole block, the "
            f"{act} and the product that consumes it, inside the checkpointed function."
        )
    if f.kind == "saved_read":
        return (
            f"The backward pass reads the forward {act} of {prod} (the saved activation) "
            f"instead of recomputing it (no checkpoint, a checkpoint outside the differentiated "
            f"function, or a policy that saves everything). To rematerialize it, {fix}."
        )
    return (
        f"No {act} recomputed from the saved product {prod} is used by the gradients: the "
        f"backward pass does not rematerialize the {act}. To rematerialize it, {fix}."
    )


_NAME = r"^[A-Za-z_][A-Za-z0-9_.]*$"


class RematerializedActivationOptions(RuleOptions):
    activation: str = Field(pattern=_NAME, description="the activation op, e.g. tanh")
    product: tuple[str, str] = Field(description="input paths of the matmul's operands")
    primal: list[str] = Field(description="output paths of the forward values, e.g. [loss]")
    gradients: list[str] = Field(min_length=1, description="output paths of the gradients")
    policy: str = Field(pattern=_NAME, description="the checkpoint policy fix-its name")
    feeds: list[str] = Field(default=[], max_length=16, description=(
        "output paths the recomputed activation must move too: a weight gradient that needs "
        "the activation itself (its product's), which a saved copy could otherwise serve"))
    fed_share: float = Field(default=FED, gt=0, le=1, description=(
        "how far, of its size, changing the recomputed activation must move each of `feeds` "
        "(an honest gradient moves wholly; one read mostly from a saved copy, by its share)"))
    local_share: float = Field(default=LOCAL, gt=0, le=1, description=(
        "the largest share of a fed gradient's elements that one element of the recomputed "
        "activation may move (W2's h^T g moves in one row; a saved copy rescaled by a factor "
        "recomputed from every element moves in all of them); 1 turns the check off"))


@register("rematerialized_activation", "program", RematerializedActivationOptions)
def check_rematerialized_activation(
    programs: Sequence[ProgramInfo],
    *,
    activation: str,
    product: Sequence[str],
    primal: Sequence[str],
    gradients: Sequence[str],
    policy: str,
    feeds: Sequence[str] = (),
    fed_share: float = FED,
    local_share: float = LOCAL,
) -> RuleOutcome:
    """The gradients use an activation recomputed from the saved product, never the forward one.

    Pass iff that holds in every program (see the module docstring)."""
    if (
        not isinstance(activation, str)
        or not activation
        or not isinstance(policy, str)
        or not isinstance(product, Sequence)
        or len(product) != 2
        or not all(isinstance(p, str) and p for p in product)
        or not all(isinstance(ps, Sequence) and not isinstance(ps, str)
                   and all(isinstance(p, str) for p in ps) for ps in (primal, gradients))
        or not all(isinstance(v, int | float) and not isinstance(v, bool) and 0 < v <= 1
                   for v in (fed_share, local_share))
    ):
        return RuleOutcome(False, "The requirement is misconfigured (its activation, product, "
                                  "output or threshold options).")
    if not isinstance(programs, Sequence) or isinstance(programs, str | bytes):
        return RuleOutcome(False, "No exported program was available to check.")
    programs = list(programs)
    if not programs:
        return RuleOutcome(False, "No exported program was available to check.")
    if len(programs) > MAX_PROGRAMS:
        return RuleOutcome(False, f"Too many exported programs to check (> {MAX_PROGRAMS}).")
    if not all(isinstance(p, ProgramInfo) for p in programs):
        return RuleOutcome(False, "The exported programs are malformed and could not be checked.")
    total = sum(len(p.text) if isinstance(p.text, str) else 0 for p in programs)
    if total > MAX_TOTAL_CHARS:
        return RuleOutcome(False, (
            f"The exported programs are too large to verify ({total >> 20} MiB of StableHLO "
            f"over {len(programs)} input shapes; at most {MAX_TOTAL_CHARS >> 20} MiB are "
            "analyzed): remove dead computations from solve."))
    budget = Budget()
    findings = [
        analyze_program(p, activation=activation, product=product, primal=primal,
                        gradients=gradients, budget=budget)
        for p in programs
    ]
    opts = {"activation": activation, "product": product, "policy": policy}
    failed = [f for f in findings if f.kind != "ok"]
    if not failed:
        for p in programs:  # what the run showed (jaxjudge.analysis.observed)
            seen = recomputed(p.observed, p.outs, tuple(primal), tuple(gradients), activation,
                              tuple(feeds), fed_share=fed_share, local_share=local_share)
            if seen is not None:
                return RuleOutcome(False, f"{seen}. Put the block in jax.checkpoint(..., "
                                          f"policy={policy}) inside the function you "
                                          f"differentiate.", region=findings[0].region)
        msg = _message(findings[0], **opts)
        if len(findings) > 1:
            msg += f" (checked {len(findings)} input-shape signatures)"
        return RuleOutcome(True, msg, region=findings[0].region)
    first = failed[0]
    msg = _message(first, **opts)
    if len(findings) > 1 and any(f.kind != first.kind for f in findings):
        sigs = ", ".join(f.signature for f in failed if f.kind == first.kind)
        msg = f"For input shapes {sigs}: {msg}"
    return RuleOutcome(False, msg, region=first.region)
