"""Program-level rule: the exported StableHLO really rematerializes the activation.

The spec-level rule reads what the submission *asked* JAX to do; this one reads what the compiled
program *does*, so it cannot be fooled by a decoy checkpoint. The signal is dataflow: with
`dots_saveable` inside the differentiated function, the matmul `x @ W1` is computed once and its
(saved) result feeds two tanh ops, the forward one and the backward pass's recomputation. Other
policies leave one tanh per product (the activation itself is saved, or the matmul is recomputed
along with it).

The analysis inlines every `func.call` (each call site gets its own copy of the callee's values,
so a helper called twice is not conflated), links while/case carried values, then:

1. origins: which values are a main argument seen through pass-through ops only;
2. products: dot_general/dot ops whose operands are the two `product` arguments;
3. for each product, the activation ops reached from its result through pass-through ops and
   add/subtract (the bias), i.e. never through another matmul or activation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from grader.rules import ProgramInfo, RuleOutcome
from grader.rules.stablehlo import Block, Module, Op, ParseError, parse_module

MAX_PROGRAMS = 64
MAX_INLINED_OPS = 200_000
MAX_CALL_DEPTH = 32

# Ops whose result *is* operand 0 (re-laid-out, re-typed or re-rounded but the same values).
_PASS_OPERAND0 = frozenset(
    {
        "stablehlo.convert",
        "stablehlo.reshape",
        "stablehlo.dynamic_reshape",
        "stablehlo.transpose",
        "stablehlo.broadcast_in_dim",
        "stablehlo.dynamic_broadcast_in_dim",
        "stablehlo.broadcast",
        "stablehlo.copy",
        "stablehlo.reduce_precision",
        "stablehlo.slice",
        "stablehlo.dynamic_slice",
        "mhlo.copy",
    }
)
# Ops whose result holds operands 0 and 1 (scan residual stacking).
_PASS_OPERANDS01 = frozenset({"stablehlo.dynamic_update_slice"})
# Result i is operand i.
_PASS_ELEMENTWISE_TUPLE = frozenset({"stablehlo.optimization_barrier"})
# The bias step between the product and the activation: flows for counting, not for origins.
_BIAS = frozenset({"stablehlo.add", "stablehlo.subtract"})
_PRODUCT_OPS = frozenset({"stablehlo.dot_general", "stablehlo.dot"})
_RETURNS = frozenset({"func.return", "stablehlo.return", "mhlo.return"})

Kind = Literal["ok", "parse_error", "no_product", "no_activation", "single", "recomputed"]


@dataclass
class ProgramFinding:
    """What the dataflow analysis found in one program (tests assert on `kind`)."""

    signature: str
    kind: Kind
    products: int = 0
    activations_per_product: list[int] = field(default_factory=list)
    detail: str = ""


class _Graph:
    """Value nodes of the fully inlined program and the two kinds of flow edges between them."""

    def __init__(self) -> None:
        self.ids: dict[tuple[int, str], int] = {}
        self.pass_edges: list[list[int]] = []
        self.bias_edges: list[list[int]] = []
        self.products: list[tuple[int, int, int]] = []  # (lhs, rhs, result)
        self.activations: list[int] = []  # operand node of each activation op instance
        self.main_args: list[int] = []

    def node(self, inst: int, name: str) -> int:
        key = (inst, name)
        found = self.ids.get(key)
        if found is None:
            found = len(self.pass_edges)
            self.ids[key] = found
            self.pass_edges.append([])
            self.bias_edges.append([])
        return found

    def link(self, src: int, dst: int) -> None:
        self.pass_edges[src].append(dst)

    def reach(self, seeds: Iterable[int], *, with_bias: bool) -> set[int]:
        seen = set(seeds)
        stack = list(seen)
        while stack:
            n = stack.pop()
            nexts = self.pass_edges[n] + self.bias_edges[n] if with_bias else self.pass_edges[n]
            for m in nexts:
                if m not in seen:
                    seen.add(m)
                    stack.append(m)
        return seen


def _region_return(region: list[Block]) -> list[Op]:
    return [op for block in region for op in block.ops if op.name in _RETURNS]


def _build_graph(module: Module, activation: str) -> _Graph:
    functions = module.functions()
    main = functions.get("main")
    if main is None:
        publics = [f for f in functions.values() if f.attrs.get("sym_visibility") == "public"]
        main = publics[0] if len(publics) == 1 else None
    if main is None or not main.regions or not main.regions[0]:
        raise ParseError("the module has no main function")
    g = _Graph()
    g.main_args = [g.node(0, a) for a in main.regions[0][0].args]
    n_insts = 1
    budget = MAX_INLINED_OPS
    # Work items: (function op, instance id, names of the functions on the call path).
    work: list[tuple[Op, int, tuple[str, ...]]] = [(main, 0, ("main",))]
    while work:
        func, inst, path = work.pop()
        ops: list[Op] = [op for region in func.regions for b in region for op in b.ops]
        ops.reverse()
        while ops:
            op = ops.pop()
            budget -= 1
            if budget < 0:
                raise ParseError(f"the program has more than {MAX_INLINED_OPS} ops once inlined")
            res = [g.node(inst, r) for r in op.results]
            opd = [g.node(inst, o) for o in op.operands]
            name = op.name
            if name in _PASS_OPERAND0 and opd:
                for r in res:
                    g.link(opd[0], r)
            elif name in _PASS_OPERANDS01:
                for r in res:
                    for o in opd[:2]:
                        g.link(o, r)
            elif name in _PASS_ELEMENTWISE_TUPLE:
                for o, r in zip(opd, res, strict=False):
                    g.link(o, r)
            elif name in _BIAS:
                for o in opd:
                    for r in res:
                        g.bias_edges[o].append(r)
            elif name in _PRODUCT_OPS and len(opd) >= 2 and res:
                g.products.append((opd[0], opd[1], res[0]))
            elif name == activation and opd:
                g.activations.append(opd[0])
            elif name == "func.call":
                callee_name = op.attrs.get("callee", "")
                callee = functions.get(callee_name)
                if callee is None or not callee.regions or not callee.regions[0]:
                    raise ParseError(f"func.call to unknown function @{callee_name}")
                if callee_name in path:
                    raise ParseError(f"recursive call to @{callee_name}")
                if len(path) >= MAX_CALL_DEPTH:
                    raise ParseError("calls nested too deeply")
                sub = n_insts
                n_insts += 1
                body = callee.regions[0]
                for o, a in zip(opd, body[0].args, strict=False):
                    g.link(o, g.node(sub, a))
                for ret in _region_return(body):
                    for v, r in zip(ret.operands, res, strict=False):
                        g.link(g.node(sub, v), r)
                work.append((callee, sub, (*path, callee_name)))
                continue
            elif name == "stablehlo.while" and len(op.regions) == 2:
                cond, body = op.regions
                for o, r in zip(opd, res, strict=False):
                    g.link(o, r)
                targets = [region[0].args for region in (cond, body) if region]
                for args in targets:
                    for o, a in zip(opd, args, strict=False):
                        g.link(o, g.node(inst, a))
                for ret in _region_return(body):
                    back = [g.node(inst, v) for v in ret.operands]
                    for v, r in zip(back, res, strict=False):
                        g.link(v, r)
                    for args in targets:
                        for v, a in zip(back, args, strict=False):
                            g.link(v, g.node(inst, a))
            elif name in ("stablehlo.case", "stablehlo.if"):
                for region in op.regions:
                    for ret in _region_return(region):
                        for v, r in zip(ret.operands, res, strict=False):
                            g.link(g.node(inst, v), r)
            # Nested regions (while/case bodies, reduce bodies, ...) are walked in place: their
            # values share the function's namespace.
            for region in reversed(op.regions):
                for block in reversed(region):
                    ops.extend(reversed(block.ops))
    return g


def _display(path: str) -> str:
    """Turn "params.w1" into "params['w1']", as a learner writes it."""
    head, *keys = path.split(".")
    return head + "".join(f"[{k!r}]" for k in keys)


def analyze_program(
    program: ProgramInfo, *, activation: str, product: Sequence[str]
) -> ProgramFinding:
    """Classify one program. Never raises on hostile input: returns kind "parse_error"."""
    sig = program.signature if isinstance(program.signature, str) else "?"
    act = activation if "." in activation else f"stablehlo.{activation}"
    try:
        if not isinstance(program.args, list) or not all(isinstance(a, str) for a in program.args):
            raise ParseError("the argument list is malformed")
        graph = _build_graph(parse_module(program.text), act)
    except ParseError as exc:
        return ProgramFinding(sig, "parse_error", detail=str(exc))
    except (ValueError, TypeError, KeyError, IndexError, RecursionError, MemoryError) as exc:
        # Defensive: the caps and checks above should make these unreachable.
        return ProgramFinding(sig, "parse_error", detail=type(exc).__name__)
    if len(graph.main_args) != len(program.args):
        detail = (
            f"main has {len(graph.main_args)} arguments but {len(program.args)} input paths "
            "were given"
        )
        return ProgramFinding(sig, "parse_error", detail=detail)
    a_path, b_path = product[0], product[1]
    seeds_a = [n for n, p in zip(graph.main_args, program.args, strict=False) if p == a_path]
    seeds_b = [n for n, p in zip(graph.main_args, program.args, strict=False) if p == b_path]
    from_a = graph.reach(seeds_a, with_bias=False)
    from_b = graph.reach(seeds_b, with_bias=False)
    counts: list[int] = []
    activation_inputs: dict[int, int] = {}
    for node in graph.activations:
        activation_inputs[node] = activation_inputs.get(node, 0) + 1
    for lhs, rhs, result in graph.products:
        if (lhs in from_a and rhs in from_b) or (lhs in from_b and rhs in from_a):
            fed = graph.reach([result], with_bias=True)
            counts.append(sum(k for node, k in activation_inputs.items() if node in fed))
    if not counts:
        return ProgramFinding(sig, "no_product")
    finding = ProgramFinding(sig, "ok", len(counts), counts)
    if max(counts) >= 2:
        return finding
    if max(counts) == 0:
        finding.kind = "no_activation"
    elif sum(counts) >= 2:
        finding.kind = "recomputed"
    else:
        finding.kind = "single"
    return finding


def _message(f: ProgramFinding, *, activation: str, product: Sequence[str]) -> str:
    act = activation.removeprefix("stablehlo.")
    prod = f"{_display(product[0])} @ {_display(product[1])}"
    fix = (
        "wrap the block in jax.checkpoint(..., policy=jax.checkpoint_policies.dots_saveable) "
        "inside the function you pass to jax.grad/jax.value_and_grad"
    )
    if f.kind == "ok":
        return (
            f"The saved product {prod} feeds {max(f.activations_per_product)} {act} ops: the "
            f"backward pass recomputes the {act} from it."
        )
    if f.kind == "parse_error":
        return (
            f"The exported program could not be analyzed ({f.detail}), so the "
            f"{act} rematerialization cannot be confirmed."
        )
    if f.kind == "no_product":
        return (
            f"No matrix product of {_display(product[0])} and {_display(product[1])} was found "
            f"in the exported program: compute the pre-activation with a matmul "
            f"({prod}, jnp.dot or jnp.einsum) so dots_saveable can save it."
        )
    if f.kind == "no_activation":
        return (
            f"{prod} is computed but no {act} is applied to it (directly or after adding the "
            f"bias): compute the activation with jnp.{act} on {prod} plus the bias."
        )
    if f.kind == "recomputed":
        return (
            f"{prod} is computed {f.products} times and each result feeds a single {act}: the "
            f"backward pass recomputes {prod} too instead of recomputing only the {act} from the "
            f"saved product (a policy that saves no matmul result, such as nothing_saveable or "
            f"no policy, does this). Use policy=jax.checkpoint_policies.dots_saveable: {fix}."
        )
    return (
        f"The {act} is computed only once from {prod}: the backward pass reuses the saved "
        f"activation instead of recomputing it (no checkpoint, a checkpoint outside the "
        f"differentiated function, or a policy that saves everything). To rematerialize it, "
        f"{fix}."
    )


def check_rematerialized_activation(
    programs: Sequence[ProgramInfo], *, activation: str = "tanh", product: list[str] | None = None
) -> RuleOutcome:
    """Pass iff in every program some `product` result feeds >= 2 `activation` ops."""
    if product is None:
        product = ["x", "params.w1"]
    if (
        not isinstance(activation, str)
        or not activation
        or not isinstance(product, list | tuple)
        or len(product) != 2
        or not all(isinstance(p, str) and p for p in product)
    ):
        return RuleOutcome(False, "The requirement is misconfigured (activation/product options).")
    if not isinstance(programs, Sequence) or isinstance(programs, str | bytes):
        return RuleOutcome(False, "No exported program was available to check.")
    programs = list(programs)
    if not programs:
        return RuleOutcome(False, "No exported program was available to check.")
    if len(programs) > MAX_PROGRAMS:
        return RuleOutcome(False, f"Too many exported programs to check (> {MAX_PROGRAMS}).")
    if not all(isinstance(p, ProgramInfo) for p in programs):
        return RuleOutcome(False, "The exported programs are malformed and could not be checked.")
    findings = [analyze_program(p, activation=activation, product=product) for p in programs]
    failed = [f for f in findings if f.kind != "ok"]
    if not failed:
        msg = _message(findings[0], activation=activation, product=product)
        if len(findings) > 1:
            msg += f" (checked {len(findings)} input-shape signatures)"
        return RuleOutcome(True, msg)
    first = failed[0]
    msg = _message(first, activation=activation, product=product)
    if len(findings) > 1 and any(f.kind != first.kind for f in findings):
        sigs = ", ".join(f.signature for f in failed if f.kind == first.kind)
        msg = f"For input shapes {sigs}: {msg}"
    return RuleOutcome(False, msg)
