"""What a loop's gates decide at each of its steps (`loop_over_dim`'s `every_step`).

A loop may gate its update on its own progress: `jnp.where(t == 0, x[0], update)` (an honest
first step that only sets the starting value) or `jnp.where(2 * t < T, update, carry)` (an
update run at half of the steps, the carry passed along at the others). What such a gate reads
is data-free: the counter, a flag carried beside it, and what the body computes from them and
from constants (the loop's *control values*). So they can be run. Starting from the loop's
constant initial values, the body is evaluated step by step, exactly (an integer that would not
fit its type, like a value no fold knows, is unknown), for the trip count already proven
(`jaxjudge.analysis.tripcount`). A carried value whose update cannot be evaluated at some step is
not a control value: the run starts again without it. Small integer arrays computed from
control values and constants (an index vector such as `4 * j + jnp.arange(4) < T`, and
`jnp.any`, `jnp.all` or `jnp.sum` of one) are run exactly too (`jaxjudge.analysis.indexarrays`),
so a guard built from one is decided like a gate on the counter.

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

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from jaxjudge.analysis.dataflow import Graph, Kind, Loop, Step
from jaxjudge.analysis.folding import (
    Bits,
    Transfer,
    Value,
    element_of,
    evaluate,
    fits,
    is_int,
)
from jaxjudge.analysis.indexarrays import small as small_array
from jaxjudge.analysis.stablehlo import Op, tensor_types
from jaxjudge.analysis.tripcount import origin, trip_count

MAX_TABLE = 1024  # elements of a constant table a step index is read from (as parsed)
MAX_TABLE_DEPTH = 16  # converts and constant shifts a table is followed through
_FLOATS: dict[str, Callable[[float], object]] = {
    "f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": lambda v: _bf16()(v)}


def _bf16() -> Callable[[float], object]:
    """ml_dtypes' bfloat16, imported on first use: `import jaxjudge` stays light (the CLI's
    start-up imports the rules, never ml_dtypes)."""
    import ml_dtypes

    return ml_dtypes.bfloat16  # type: ignore[no-any-return]
_COPIES = frozenset({"stablehlo.reshape", "stablehlo.broadcast_in_dim", "stablehlo.convert",
                     "stablehlo.transpose", "stablehlo.copy", "stablehlo.broadcast"})

_ABSORBS = frozenset({"stablehlo.multiply", "stablehlo.and", "stablehlo.or",
                      "stablehlo.dot_general", "stablehlo.dot", "stablehlo.convolution"})
_CONDITIONALS = ("stablehlo.case", "stablehlo.if")


class ValuesAt:
    """Folded constants, with a loop's control values as they are at some of its steps.
    `soft` holds float values known only by folding `0 * v` (v may be inf at run time): they
    cut dependence like folding does, but no gate is decided from them."""

    def __init__(self, values: list[Value], env: dict[int, Value],
                 soft: dict[int, Value] | None = None) -> None:
        self.values, self.env, self.soft = values, env, soft or {}

    def __getitem__(self, n: int) -> Value:
        v = self.env.get(n)
        if v is None:
            v = self.soft.get(n)
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
    inner: list[Loop]  # loops nested in this one
    values: list[Value]  # the program's folded constants
    tables: dict[int, tuple[int | float, ...] | None] = field(default_factory=dict)


def _plan(g: Graph, values: list[Value], loop: Loop) -> _Plan:
    inner = [other for other in g.loops if other is not loop
             and loop.first <= other.first and other.end <= loop.end]
    skipped: set[int] = set()
    opaque: set[int] = set()
    for other in inner:
        skipped.update(range(other.first, other.end))
        opaque.update(other.results)
        opaque.update(other.body_args)
        opaque.update(other.cond_args)
    plan = _Plan([], {}, {}, opaque, [], set(loop.body_args), inner, values)
    seen_gates: set[int] = set()
    for other in inner:  # how many steps a nested loop runs may depend on this one's step
        for o in other.operands:
            if o not in seen_gates:
                seen_gates.add(o)
                plan.gates.append((o, True))
    for i in range(loop.first, loop.end):
        if i in skipped:
            if any(other.first == i for other in inner):
                plan.order.append(i)  # where a nested loop's unchanged values are set
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


def _table(g: Graph, plan: _Plan, loop: Loop, n: int,
           depth: int = 0) -> tuple[int | float, ...] | None:
    """The values of a 1-D constant the body reads a step's entry of (`jnp.arange(T)` as an
    iota, `np.arange(T)` or any literal list, shifted or scaled by a constant), through copies
    and the loop's values passed along unchanged; None when not such a table."""
    n = origin(g, n)
    if n in plan.tables:
        return plan.tables[n]
    if depth > MAX_TABLE_DEPTH:
        return None
    plan.tables[n] = None
    g.budget.spend()
    out: tuple[int | float, ...] | None = None
    heads = {h: p for p, h in enumerate(loop.body_args)}
    if n in heads:
        p = heads[n]
        if p < len(loop.operands) and all(p < len(r) and origin(g, r[p]) == n
                                          for r in loop.body_returns):
            out = _table(g, plan, loop, loop.operands[p], depth + 1)
    else:
        found = g.producers()[n]
        op = g.ops[found[0][0]] if len(found) == 1 and found[0][1] < 0 else None
        step = g.steps[found[0][0]] if op is not None else None
        types = tensor_types(op.type.rpartition("->")[2]) if op is not None else []
        if op is None or step is None or len(types) != 1 or len(types[0].dims) != 1:
            pass
        elif op.name == "stablehlo.iota" and types[0].dims[0] and (
                types[0].dims[0] <= MAX_TABLE):
            out = tuple(range(types[0].dims[0]))
        elif op.name == "stablehlo.constant":
            out = _literal_list(op)
        elif op.name == "stablehlo.convert" and step.operands:
            inner = _table(g, plan, loop, step.operands[0], depth + 1)
            cast = _FLOATS.get(types[0].element)
            if inner is not None and (cast or is_int(types[0].element)):
                out = tuple(float(cast(v)) if cast else int(v) for v in inner)
        elif op.name in ("stablehlo.add", "stablehlo.subtract", "stablehlo.multiply") and len(
                step.operands) == 2:
            out = _table_arith(g, plan, loop, op, step.operands, depth + 1)
    if out is not None:
        g.budget.spend(len(out))
    plan.tables[n] = out
    return out


def _literal_list(op: Op) -> tuple[int | float, ...] | None:
    """A 1-D literal `dense<[0, 1, 2]>` (ints or floats), None for anything else."""
    raw = op.attrs.get("value", "")
    if not (raw.startswith("dense<[") and raw.endswith("]>")) or len(raw) > 32 * MAX_TABLE:
        return None
    try:
        items = [float(v) if any(c in v for c in ".eEn") else int(v)
                 for v in raw[7:-2].split(",")]
    except ValueError:
        return None
    return tuple(items) if 0 < len(items) <= MAX_TABLE else None


def _table_arith(g: Graph, plan: _Plan, loop: Loop, op: Op, operands: tuple[int, ...],
                 depth: int) -> tuple[int | float, ...] | None:
    """A table shifted or scaled by a folded constant (`iota + 1`)."""
    values = plan.values
    a, b = operands
    ta, tb = _table(g, plan, loop, a, depth), _table(g, plan, loop, b, depth)
    element = element_of(op)
    out = []
    if ta is not None and isinstance(values[b], (int, float)):
        pairs = [(v, values[b]) for v in ta]
    elif tb is not None and isinstance(values[a], (int, float)):
        pairs = [(values[a], v) for v in tb]
    else:
        return None
    for x, y in pairs:
        v = evaluate(op, [x, y], True, element)
        if not isinstance(v, (int, float)):
            return None
        out.append(v)
    return tuple(out)


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


def _run(g: Graph, values: list[Value], plan: _Plan, loop: Loop, env: dict[int, Value],
         soft: dict[int, Value]) -> None:
    """Evaluate one step of the body into `env` (seeded with the carried control values), and
    into `soft` what only a float `0 * v` fold gives."""
    ops = g.ops
    g.budget.spend(len(plan.order))
    starts = {other.first: other for other in plan.inner}
    arrays: dict[int, np.ndarray] = {}  # this step's small integer arrays (`small_array`)
    for i in plan.order:
        step = g.steps[i]
        if i in starts:
            _enter(g, starts[i], env)
            continue
        small = small_array(g, i, step, env, values, arrays)
        if small is not None:
            r = step.results[0]
            if r not in plan.opaque:
                g.budget.spend(max(1, small.size // 64))
                if small.ndim:
                    arrays[r] = small
                first = int(small.flat[0]) if small.size else None
                if first is not None and bool((small == first).all()):
                    env[r] = first  # a splat, as the scalar folds hold one
            continue
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
                if r in plan.opaque or len(g.producers()[r]) != 1:
                    continue
                if o in arrays:  # an index array passed into a call (jnp's reduce helpers)
                    arrays[r] = arrays[o]
                if v is not None:
                    env[r] = v
                elif o in soft:
                    soft[r] = soft[o]
            continue
        op = ops[i] if i < len(ops) else None
        if op is None or len(step.results) != 1 or step.results[0] in plan.opaque:
            continue
        args = [env.get(o, values[o]) for o in step.operands]
        r = step.results[0]
        if op.name == "stablehlo.dynamic_slice" and len(args) == 2 and isinstance(args[1], int):
            v = _entry(g, plan, loop, step, op, args[1])
            if v is not None:
                env[r] = v
                continue
        if step.operands and all(a is None for a in args) and not any(
                o in soft for o in step.operands):
            continue
        element = element_of(op)
        v = _exact(evaluate(op, args, True, element), element)
        if v is not None:
            env[r] = v
        elif op.name in _ABSORBS or any(o in soft for o in step.operands):
            # `0 * v` is 0 only while v is finite: it cuts dependence, it decides no gate.
            v = _exact(evaluate(op, [soft.get(o, a) for o, a in zip(step.operands, args,
                                                                     strict=True)],
                                False, element), element)
            if v is not None and element in _FLOATS:
                soft[r] = v


def _exact(v: Value, element: str) -> Value:
    """A value as its element type holds it: an integer that does not fit is unknown, a float
    is rounded to its precision (1 + 1e-8 is 1 in f32; 1e39 is inf), other types unknown."""
    if isinstance(v, bool):
        v = int(v)
    if isinstance(v, int):
        return v if not is_int(element) or fits(v, element) else None
    if isinstance(v, float):
        cast = _FLOATS.get(element)
        if cast is None:
            return None
        with np.errstate(all="ignore"):
            out = float(cast(v))
        return None if out != out else out
    return None


def _entry(g: Graph, plan: _Plan, loop: Loop, step: Step, op: Op,
           index: int) -> int | float | None:
    """One entry of a constant table at a known index (`jnp.arange(T)[t]`, `table[t]`)."""
    out = tensor_types(op.type.rpartition("->")[2])
    if len(out) != 1 or out[0].dims != (1,):
        return None
    table = _table(g, plan, loop, step.operands[0])
    if not table:
        return None
    return table[min(max(index, 0), len(table) - 1)]


def _enter(g: Graph, inner: Loop, env: dict[int, Value]) -> None:
    """A nested loop's values passed along unchanged hold what it starts from at every one of
    its steps (so its trip count can be worked out at this step)."""
    for p, head in enumerate(inner.body_args):
        if p >= len(inner.operands) or any(p >= len(r) or origin(g, r[p]) != head
                                           for r in inner.body_returns):
            continue
        v = env.get(inner.operands[p])
        if v is not None:
            env[head] = v
            if p < len(inner.cond_args):
                env[inner.cond_args[p]] = v


def _returned(loop: Loop, env: dict[int, Value], p: int) -> Value:
    """Carried value p as every return of the body gives it (None: unknown or not alike)."""
    found = {env.get(ret[p]) if p < len(ret) else None for ret in loop.body_returns}
    return found.pop() if len(found) == 1 else None


def control_groups(g: Graph, values: list[Value], loop: Loop, n: int
                   ) -> tuple[list[Group], set[int]]:
    """The loop's `n` steps grouped by what their gates decide, and the carried positions run
    as control values. Each group's body is read once (the budget bounds how many). `values`
    must be folded exactly (`fold_constants(g, exact=True)`): a gate decided by `0 * v` where
    v may be inf at run time is not decided."""
    plan = _plan(g, values, loop)
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
    for env, soft in runs:
        key = tuple(_decision(env.get(node, soft.get(node)), index)
                    for node, index in plan.gates)
        group = groups.get(key)
        if group is None:
            group = groups[key] = Group(0, ValuesAt(values, env, soft))
        group.steps += 1
    return list(groups.values()), control


def _decision(v: Value, index: bool) -> Value:
    if v is None or index:
        return v
    return v != 0


def _simulate(g: Graph, values: list[Value], loop: Loop, plan: _Plan, control: set[int],
              n: int) -> list[tuple[dict[int, Value], dict[int, Value]]] | int:
    """Each step's control values, or the first carried position that could not be run."""
    heads = loop.body_args
    current = {p: values[loop.operands[p]] for p in control}
    runs: list[tuple[dict[int, Value], dict[int, Value]]] = []
    for _ in range(n):
        env: dict[int, Value] = {heads[p]: current[p] for p in control}
        soft: dict[int, Value] = {}
        _run(g, values, plan, loop, env, soft)
        runs.append((env, soft))
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
    plan = _plan(g, values.values, loop)
    index = {id(g.steps[i]): i for i in (*plan.links, *plan.branches)}
    chosen = {i: _taken(g.steps[i], values[g.steps[i].operands[0]], len(rets))
              for i, rets in plan.branches.items()}
    idle_inner = _idle_inner(g, loop, plan, values)
    copies: dict[int, int] = {}
    integers: dict[int, bool] = {}  # a step (by id) -> it computes integers (its type, read once)

    def alone(b: int) -> bool:
        """A value of the gate alone (and of carried values computed from no argument)."""
        return b & gate != 0 and b & ~(gate | control) == 0

    def source(n: int) -> int:
        """What `n` copies: back through layout ops, converts, `* 1`, `+ 0` and `/ 1`."""
        if n in copies:
            return copies[n]
        start = n
        for _ in range(16):
            g.budget.spend()
            n = origin(g, n)
            found = g.producers()[n]
            if len(found) != 1 or found[0][1] >= 0 or g.ops[found[0][0]] is None:
                break
            nxt = _copied(g.ops[found[0][0]], g.steps[found[0][0]].operands, values)
            if nxt is None:
                break
            n = nxt
        copies[start] = n
        return n

    def passes(nodes: tuple[int, ...]) -> bool:
        """Whether one of the values is a carried value passed along (or a copy of one)."""
        return any(o in plan.heads or source(o) in plan.heads for o in nodes)

    def pieces(n: int) -> tuple[int, ...]:
        """The operands of the concatenation `n` copies (a `jnp.stack`), or none."""
        found = g.producers()[source(n)]
        if len(found) == 1 and found[0][1] < 0 and g.steps[found[0][0]].name == (
                "stablehlo.concatenate"):
            return g.steps[found[0][0]].operands
        return ()

    def gated(i: int, bits: Bits) -> bool:
        """A conditional on the gate, not decided here, one of whose branches passes along."""
        return (chosen[i] is None and bits[g.steps[i].operands[0]] & gate != 0
                and any(map(passes, plan.branches[i])))

    def transfer(step: Step, bits: Bits) -> list[int] | None:
        ops, n = step.operands, len(step.results)
        if id(step) in idle_inner:
            return None  # a nested loop that runs no step here returns what it starts from
        if step.name == "stablehlo.select" and len(ops) == 3 and values[ops[0]] is None and (
                bits[ops[0]] & gate) and passes(ops[1:]):
            return [bits[ops[1]] & bits[ops[2]] & ~gate] * n
        if step.name in ("stablehlo.dynamic_slice", "stablehlo.gather") and len(ops) >= 2 and (
                any(bits[o] & gate for o in ops[1:])):
            parts = pieces(ops[0])
            if parts and passes(parts):  # `jnp.stack([old, new])[flag]`: one of them
                acc = -1
                for o in parts:
                    acc &= bits[o]
                return [acc & ~gate] * n
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
        computes_ints = integers.get(id(step))
        if computes_ints is None:
            computes_ints = integers[id(step)] = _int_results(step)
        if any(gated) and (computes_ints or all(
                alone(bits[o]) or values[o] is not None for o in step.operands)):
            return [(b & ~gate) | gate for b in out] if out else [gate] * len(step.results)
        return [b & ~gate for b in out] if out else out

    return transfer


def _idle_inner(g: Graph, loop: Loop, plan: _Plan, values: ValuesAt) -> set[int]:
    """The back-edge links of the nested loops that run no step at these steps (a
    `fori_loop(0, jnp.where(i == 0, 8, 0), ...)` at i > 0), by id."""
    out: set[int] = set()
    for inner in plan.inner:
        counted = trip_count(g, values, inner)  # type: ignore[arg-type]
        if counted is None or counted[0] != 0:
            continue
        backs = set(inner.body_returns)
        for j in range(inner.end, loop.end):
            step = g.steps[j]
            g.budget.spend()
            if step.name != "link" or step.operands not in backs:
                break
            out.add(id(step))
    return out


_NEUTRAL = {"stablehlo.multiply": 1, "stablehlo.divide": 1, "stablehlo.add": 0,
            "stablehlo.subtract": 0}


def _copied(op: Op | None, ops: tuple[int, ...], values: ValuesAt) -> int | None:
    """The operand a step gives back unchanged (a re-layout, a convert, `v * 1`, `v + 0`, `v / 1`,
    `1 * v`, `0 + v`), or None."""
    if op is None or not ops:
        return None
    if op.name in _COPIES:
        return ops[0]
    neutral = _NEUTRAL.get(op.name)
    if neutral is None or len(ops) != 2:
        return None
    if values[ops[1]] == neutral:
        return ops[0]
    if op.name in ("stablehlo.multiply", "stablehlo.add") and values[ops[0]] == neutral:
        return ops[1]
    return None

