"""What a loop's gates decide at each of its steps (`loop_over_dim`'s `every_step`).

A loop may gate its update on its own progress: `jnp.where(t == 0, x[0], update)` (an honest
first step that only sets the starting value) or `jnp.where(2 * t < T, update, carry)` (an
update run at half of the steps, the carry passed along at the others). What such a gate reads
is data-free: the counter, a flag carried beside it, and what the body computes from them and
from constants (the loop's *control values*). So they can be run. Starting from the loop's
constant initial values, the body is evaluated step by step, exactly (an integer that would not
fit its type, like a value no fold knows, is unknown), for the trip count already proven
(`jaxjudge.rules.tripcount`). A carried value whose update cannot be evaluated at some step is
not a control value: the run starts again without it.

The steps are then grouped by what their gates decide (a `select`'s predicate, a `case`'s or
`if`'s branch, a factor that is 0), and each group's body is read as at those steps: through
`values_at`, a select or a product reads as folded at those steps (`make_transfer` takes only
the branch a select takes, and a product with 0 depends on nothing), and `branch_transfer`
passes only the branch a conditional takes. A gate whose value is not known at those steps
(bit `gate`: computed from control values and data, as in `(2 * t < T) | (x[0] != x[0])`, or
from control values that cannot be run, a carried mask array, a constant table indexed by the
counter) is read conservatively by `branch_transfer`: a `select` or a conditional on it, one of
whose branches passes a carried value along unchanged, holds only what all of its branches
hold, and a product with a value of the gate alone holds nothing (so an honest mask applied
by multiplying with a counter-derived array, rather than by `jnp.where`, is read as a gate).

Every evaluation spends from the graph's `Budget`.
"""

from __future__ import annotations

from dataclasses import dataclass

from jaxjudge.rules.dataflow import Graph, Kind, Loop, Step
from jaxjudge.rules.folding import Bits, Transfer, Value, element_of, evaluate, fits, is_int
from jaxjudge.rules.stablehlo import tensor_types
from jaxjudge.rules.tripcount import origin

_ABSORBS = frozenset({"stablehlo.multiply", "stablehlo.and", "stablehlo.or",
                      "stablehlo.dot_general", "stablehlo.dot", "stablehlo.convolution"})
_CONDITIONALS = ("stablehlo.case", "stablehlo.if")


class ValuesAt:
    """Folded constants, with a loop's control values as they are at some of its steps."""

    def __init__(self, values: list[Value], env: dict[int, Value]) -> None:
        self.values, self.env = values, env

    def __getitem__(self, n: int) -> Value:
        v = self.env.get(n)
        return self.values[n] if v is None else v


@dataclass
class Group:
    """Steps of a loop whose gates all decide alike: how many, and the control values at the
    first of them."""

    steps: int
    values: ValuesAt


@dataclass
class _Plan:
    """The steps of a loop's body to evaluate, in program order, and its conditionals."""

    order: list[int]
    branches: dict[int, list[tuple[int, ...]]]  # a conditional's step -> its branches' returns
    links: dict[int, tuple[int, int]]  # a branch's link step -> (its conditional, branch)
    opaque: set[int]  # nodes a nested loop writes: never a control value here
    gates: list[tuple[int, bool]]  # (node, is a conditional's index) a decision is read from
    heads: set[int]  # the body's carried values (and copies of them)
    iotas: dict[int, int]  # a carried `arange(n)` (a scan over it) -> n: its rows are known


def _plan(g: Graph, loop: Loop) -> _Plan:
    inner = [other for other in g.loops if other is not loop
             and loop.first <= other.first and other.end <= loop.end]
    skipped: set[int] = set()
    opaque: set[int] = set()
    for other in inner:
        skipped.update(range(other.first, other.end))
        opaque.update(other.results)
        opaque.update(other.body_args)
        opaque.update(other.cond_args)
    plan = _Plan([], {}, {}, opaque, [], set(loop.body_args), _iotas(g, loop))
    seen_gates: set[int] = set()
    for i in range(loop.first, loop.end):
        if i in skipped:
            continue
        step = g.steps[i]
        g.budget.spend()
        if step.kind is Kind.TUPLE and any(origin(g, o) in plan.heads for o in step.operands):
            plan.heads.update(r for o, r in zip(step.operands, step.results, strict=False)
                              if origin(g, o) in plan.heads and len(g.producers()[r]) == 1)
        if i in plan.links:
            continue  # read at its conditional
        plan.order.append(i)
        if step.name in _CONDITIONALS and step.operands:
            rets = []
            for j in range(i + 1, loop.end):
                link = g.steps[j]
                if link.name != "link" or link.results != step.results[:len(link.results)]:
                    break
                plan.links[j] = (i, len(rets))
                rets.append(link.operands)
            plan.branches[i] = rets
            gates = [(step.operands[0], True)]
        elif step.name == "stablehlo.select" and len(step.operands) == 3:
            gates = [(step.operands[0], False)]
        elif step.name in _ABSORBS:
            gates = [(o, False) for o in step.operands]
        else:
            continue
        for gate in gates:
            if gate[0] not in seen_gates:
                seen_gates.add(gate[0])
                plan.gates.append(gate)
    return plan


def _iotas(g: Graph, loop: Loop) -> dict[int, int]:
    """Carried values that are an integer `arange(n)` passed along unchanged (what a scan over
    `jnp.arange(T)` reads its step index from): head -> n."""
    out: dict[int, int] = {}
    for p, head in enumerate(loop.body_args):
        if p >= len(loop.operands) or any(p >= len(r) or origin(g, r[p]) != head
                                          for r in loop.body_returns):
            continue
        found = g.producers()[origin(g, loop.operands[p])]
        if len(found) != 1 or found[0][1] >= 0:
            continue
        op = g.ops[found[0][0]]
        types = tensor_types(op.type.rpartition("->")[2]) if op is not None else []
        if (op is not None and op.name == "stablehlo.iota" and len(types) == 1
                and len(types[0].dims) == 1 and types[0].dims[0] is not None
                and is_int(types[0].element) and op.attrs.get("iota_dimension", "0") in (
                    "0", "0 : i64")):
            out[head] = types[0].dims[0]
    return out


def _int_results(step: Step) -> bool:
    """Whether the step computes integers or booleans (a counter's arithmetic, a compare)."""
    types = tensor_types(step.type.rpartition("->")[2]) if step.type else []
    return bool(types) and all(is_int(t.element) for t in types)


def _taken(step: Step, index: Value, n_branches: int) -> int | None:
    """The branch a conditional takes on a known index (`case` clamps; `if`: true first)."""
    if not isinstance(index, int) or not n_branches:
        return None
    if step.name == "stablehlo.if":
        return 0 if index else 1
    return index if 0 <= index < n_branches else n_branches - 1


def _run(g: Graph, values: list[Value], plan: _Plan, env: dict[int, Value]) -> None:
    """Evaluate one step of the body into `env` (seeded with the carried control values)."""
    ops = g.ops
    g.budget.spend(len(plan.order))
    for i in plan.order:
        step = g.steps[i]
        if step.name in _CONDITIONALS:
            rets = plan.branches.get(i, [])
            index = env.get(step.operands[0], values[step.operands[0]]) if step.operands else None
            choice = _taken(step, index, len(rets))
            for j, r in enumerate(step.results):
                found = {env.get(ret[j], values[ret[j]]) if j < len(ret) else None
                         for k, ret in enumerate(rets) if choice is None or k == choice}
                v = found.pop() if len(found) == 1 else None
                if v is not None and r not in plan.opaque:
                    env[r] = v
            continue
        if step.kind is Kind.TUPLE:
            for o, r in zip(step.operands, step.results, strict=False):
                v = env.get(o, values[o])
                if v is not None and r not in plan.opaque and len(g.producers()[r]) == 1:
                    env[r] = v
            continue
        op = ops[i] if i < len(ops) else None
        if op is None or len(step.results) != 1 or step.results[0] in plan.opaque:
            continue
        args = [env.get(o, values[o]) for o in step.operands]
        if op.name == "stablehlo.dynamic_slice" and len(args) == 2 and (
                origin(g, step.operands[0]) in plan.iotas) and isinstance(args[1], int):
            n = plan.iotas[origin(g, step.operands[0])]  # row i of arange(n), index clamped
            env[step.results[0]] = min(max(args[-1], 0), n - 1)
            continue
        if step.operands and all(a is None for a in args):
            continue
        element = element_of(op)
        v = evaluate(op, args, False, element)
        if isinstance(v, int) and is_int(element) and not fits(v, element):
            v = None
        if isinstance(v, (int, float)):
            env[step.results[0]] = v


def _returned(loop: Loop, env: dict[int, Value], p: int) -> Value:
    """Carried value p as every return of the body gives it (None: unknown or not alike)."""
    found = {env.get(ret[p]) if p < len(ret) else None for ret in loop.body_returns}
    return found.pop() if len(found) == 1 else None


def control_groups(g: Graph, values: list[Value], loop: Loop, n: int
                   ) -> tuple[list[Group], set[int]]:
    """The loop's `n` steps grouped by what their gates decide, and the carried positions run
    as control values. Each group's body is read once (the budget bounds how many)."""
    plan = _plan(g, loop)
    heads = loop.body_args
    control = {p for p in range(min(len(heads), len(loop.operands)))
               if isinstance(values[loop.operands[p]], (int, float))
               and heads[p] not in plan.opaque}
    while True:
        runs = _simulate(g, values, loop, plan, control, n)
        if isinstance(runs, list):
            break
        control.discard(runs)
    groups: dict[tuple[Value, ...], Group] = {}
    for env in runs:
        key = tuple(_decision(env.get(node), index) for node, index in plan.gates)
        group = groups.get(key)
        if group is None:
            group = groups[key] = Group(0, ValuesAt(values, env))
        group.steps += 1
    return list(groups.values()), control


def _decision(v: Value, index: bool) -> Value:
    if v is None or index:
        return v
    return v != 0


def _simulate(g: Graph, values: list[Value], loop: Loop, plan: _Plan, control: set[int],
              n: int) -> list[dict[int, Value]] | int:
    """Each step's control values, or the first carried position that could not be run."""
    heads = loop.body_args
    current = {p: values[loop.operands[p]] for p in control}
    runs: list[dict[int, Value]] = []
    for _ in range(n):
        env: dict[int, Value] = {heads[p]: current[p] for p in control}
        _run(g, values, plan, env)
        runs.append(env)
        for p in sorted(control):
            v = _returned(loop, env, p)
            if v is None:
                return p
            current[p] = v
    return runs


def branch_transfer(g: Graph, loop: Loop, values: ValuesAt, gate: int, control: int,
                    inner: Transfer) -> Transfer:
    """`inner` (dependence as folded through `values`), with conditionals taking only the
    branch they take at those steps, and conservative gates (bit `gate`): a select or
    conditional on the gate that passes a carried value along in one branch holds only what
    all its branches hold; a product with a value of the gate alone holds nothing. `control`:
    the bits of carried values computed from no argument (a mask array), which a value of the
    gate alone may also hold."""
    plan = _plan(g, loop)
    index = {id(g.steps[i]): i for i in (*plan.links, *plan.branches)}
    chosen = {i: _taken(g.steps[i], values[g.steps[i].operands[0]], len(rets))
              for i, rets in plan.branches.items()}

    def alone(b: int) -> bool:
        """A value of the gate alone (and of carried values computed from no argument)."""
        return b & gate != 0 and b & ~(gate | control) == 0

    def passes(nodes: tuple[int, ...]) -> bool:
        return any(o in plan.heads for o in nodes)

    def gated(i: int, bits: Bits) -> bool:
        """A conditional on the gate, not decided here, one of whose branches passes along."""
        return (chosen[i] is None and bits[g.steps[i].operands[0]] & gate != 0
                and any(map(passes, plan.branches[i])))

    def transfer(step: Step, bits: Bits) -> list[int] | None:
        ops, n = step.operands, len(step.results)
        if step.name == "stablehlo.select" and len(ops) == 3 and values[ops[0]] is None and (
                bits[ops[0]] & gate) and passes(ops[1:]):
            return [bits[ops[1]] & bits[ops[2]] & ~gate] * n
        i = index.get(id(step))
        if i in plan.links:
            cond, branch = plan.links[i]
            if chosen[cond] is not None and branch != chosen[cond]:
                return None  # a branch not taken at these steps
            if gated(cond, bits):
                return None  # what the conditional holds is what all of its branches hold
        elif i in plan.branches and gated(i, bits):
            out = []
            for j in range(n):
                acc = -1
                for r in plan.branches[i]:
                    acc &= bits[r[j]] if j < len(r) else 0
                out.append(acc & ~gate)
            return out
        if step.kind is Kind.MULTIPLY and any(alone(bits[o]) and values[o] is None
                                              for o in ops):
            return None  # a factor of the gate alone, not known here: maybe 0
        return carry_gate(step, bits, inner(step, bits))

    def carry_gate(step: Step, bits: Bits, out: list[int] | None) -> list[int] | None:
        """The gate bit follows the loop's own bookkeeping, not its data: it reaches integer
        and boolean results (and a float copy of a value of the gate alone, `(i == 0) * 1.0`)
        whatever folding knows, and no other result (`x[t]` is data, not a gate)."""
        if step.kind is Kind.TUPLE:
            return out
        gated = [bits[o] & gate for o in step.operands]
        if any(gated) and (_int_results(step) or all(
                alone(bits[o]) or values[o] is not None for o in step.operands)):
            return [(b & ~gate) | gate for b in out] if out else [gate] * len(step.results)
        return [b & ~gate for b in out] if out else out

    return transfer
