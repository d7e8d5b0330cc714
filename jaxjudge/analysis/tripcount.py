"""How many steps a `stablehlo.while` runs, worked out from its counter (`loop_over_dim`,
`no_loop_over_dim`).

Every `scan`, `fori_loop`, `while_loop` and `map` becomes a `stablehlo.while`; JAX 0.4.38 and
0.10 lower them a little differently (a bound carried through the loop as an array, index
arithmetic before or after a `convert`), so this reads the inlined dataflow with its constants
folded (`jaxjudge.analysis.folding`), not a lowering.

The condition must be `compare(iv, bound)` (either order; LT, LE, GT, GE, NE or EQ; `iv + c` or
`c - iv` in place of `iv`, as in `start + 4 <= T` or `T - start > 0`) with `iv` a carried
integer whose body update is `iv + step` (or `iv - step`), the step, the bound and `iv`'s
initial value folding to constants. The count is then worked out (`ceil((bound - start) /
step)` for `<`). Any other condition computed from one such counter and constants with
integer or real ops (`(t < T) & True`, `t // 4 < T // 4`, `t * 4 < T`, `c < 8.0`), with a
body that computes the counter's next value from it and constants alone (`i * 2`, `c + 1.0`),
is run on the counter's successive values, exactly (a value that would wrap around or stop
being finite gives no count), for at most MAX_SIMULATED steps; anything else has no known
count. Every evaluation spends from the
graph's `Budget`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from jaxjudge.analysis.dataflow import Graph, Loop, Step
from jaxjudge.analysis.folding import COMPARE, Value, element_of, evaluate, fits, is_int
from jaxjudge.analysis.stablehlo import Op, tensor_types

MAX_TRIP_COUNT = 1 << 31
MAX_SIMULATED = 1 << 14  # steps a condition is run for when its count has no closed form
MAX_CONDITION_NODES = 64  # values computing a condition that is run
SIMULATED_COST = 2  # budget units per op of a condition run (an op costs ~2 step evaluations)
_SWAPPED = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "EQ": "EQ", "NE": "NE"}


def origin(g: Graph, n: int) -> int:
    """The node `n` is a copy of: back through links with one source and integer converts."""
    producers, budget = g.producers(), g.budget
    for _ in range(10_000):
        budget.spend()
        found = producers[n]
        if len(found) != 1:
            return n
        i, pos = found[0]
        step = g.steps[i]
        if pos >= 0 and pos < len(step.operands):
            n = step.operands[pos]
            continue
        op = g.ops[i]
        if (step.name == "stablehlo.convert" and op is not None and len(step.operands) == 1
                and all(is_int(t.element) for t in tensor_types(op.type))):
            n = step.operands[0]
            continue
        return n
    return n


def _producer(g: Graph, n: int) -> tuple[Step, Op] | None:
    """The one plain op that writes `n`, if there is exactly one."""
    found = g.producers()[n]
    if len(found) != 1 or found[0][1] >= 0:
        return None
    op = g.ops[found[0][0]]
    return None if op is None else (g.steps[found[0][0]], op)


def _int_value(values: list[Value], n: int) -> int | None:
    v = values[n]
    return v if isinstance(v, int) else None


def _count(direction: str, start: int, step: int, bound: int) -> int | None:
    """How many times `iv (direction) bound` holds for iv = start, start + step, ..."""
    holds = COMPARE[direction]
    if not holds(start, bound):
        return 0
    if direction == "EQ":
        return 1 if step != 0 else None
    if direction == "NE":
        if step == 0 or (bound - start) % step or (bound - start) // step < 0:
            return None
        return (bound - start) // step
    if direction in ("LT", "LE"):
        if step <= 0:
            return None
        last = bound if direction == "LT" else bound + 1
        return -(-(last - start) // step)
    if step >= 0:
        return None
    last = bound if direction == "GT" else bound - 1
    return -(-(start - last) // -step)


def trip_count(g: Graph, values: list[Value], loop: Loop) -> tuple[int, int] | None:
    """(iterations, carried position of the counter), or None when they cannot be proven:
    worked out in closed form for `compare(±iv + c, bound)`, else by running the condition."""
    if len(loop.cond_returns) != 1 or len(loop.cond_returns[0]) != 1 or not loop.body_returns:
        return None
    return _closed_form(g, values, loop) or _simulated(g, values, loop)


def _closed_form(g: Graph, values: list[Value], loop: Loop) -> tuple[int, int] | None:
    """The count of a condition `compare(sign * iv + offset, bound)`, without running it."""
    found = _producer(g, origin(g, loop.cond_returns[0][0]))
    if found is None or found[1].name != "stablehlo.compare" or len(found[0].operands) != 2:
        return None
    step, op = found
    direction = op.attrs.get("comparison_direction", "")
    if direction not in COMPARE or op.attrs.get("compare_type") not in (None, "SIGNED",
                                                                          "UNSIGNED"):
        return None
    heads = {n: p for p, n in enumerate(loop.cond_args)}
    for side in (0, 1):
        affine = _affine(g, values, step.operands[side], heads)
        bound = _int_value(values, step.operands[1 - side])
        if affine is None or bound is None:
            continue
        p, sign, offset = affine
        # `sign * iv + offset (d) bound`, as a comparison of iv itself: `iv (d') bound'`.
        d = direction if side == 0 else _SWAPPED[direction]
        bound = bound - offset if sign > 0 else offset - bound
        d = d if sign > 0 else _SWAPPED[d]
        if p >= len(loop.operands) or p >= len(loop.body_args):
            continue
        start = _int_value(values, loop.operands[p])
        if start is None:
            continue
        steps = {counter_step(g, values, loop, ret, p) for ret in loop.body_returns}
        if len(steps) != 1:
            continue
        delta = steps.pop()
        if delta is None:
            continue
        n = _count(d, start, delta, bound)
        if n is not None and 0 <= n <= MAX_TRIP_COUNT:
            return n, p
    return None


def _computed_from(g: Graph, values: list[Value], root: int, heads: dict[int, int]
                   ) -> tuple[list[tuple[int, Op, tuple[int, ...]]], dict[int, int],
                              set[int]] | None:
    """The ops that compute `root` from the loop's carried values `heads` (node -> position)
    and constants: (the ops in evaluation order as (node, op, operands), aliases from links,
    the positions read), or None when it reads anything else (an input, an array constant,
    a region) or computes in another than an integer or real element type."""
    producers = g.producers()
    order: list[tuple[int, Op, tuple[int, ...]]] = []
    alias: dict[int, int] = {}
    read: set[int] = set()
    seen: set[int] = set()
    stack: list[tuple[int, bool]] = [(root, False)]
    while stack:
        n, expanded = stack.pop()
        g.budget.spend()
        if expanded:
            found = _producer(g, n)
            assert found is not None
            order.append((n, found[1], found[0].operands))
            continue
        if n in seen or isinstance(values[n], (int, float)):
            continue
        seen.add(n)
        if len(seen) > MAX_CONDITION_NODES:
            return None
        if n in heads:
            read.add(heads[n])
            continue
        if len(producers[n]) != 1:
            return None
        i, pos = producers[n][0]
        step, op = g.steps[i], g.ops[i]
        if pos >= 0:
            if pos >= len(step.operands):
                return None
            alias[n] = step.operands[pos]
            stack.append((step.operands[pos], False))
            continue
        if op is None or op.regions or not all(
                is_int(t.element) or _is_real(t.element)
                for t in tensor_types(op.type.rpartition("->")[2])):
            return None
        stack.append((n, True))
        stack.extend((o, False) for o in step.operands)
    return order, alias, read


def _is_real(element: str) -> bool:
    """A float type, which the folding rounds as the program does (16-bit ones only where
    exact)."""
    return element.startswith(("f", "bf"))


def _runner(g: Graph, values: list[Value], order: list[tuple[int, Op, tuple[int, ...]]],
            alias: dict[int, int], head: int,
            root: int) -> Callable[[int | float], int | float | None]:
    """`root`'s value as a function of the counter's (`head`), computed by `order`'s ops
    exactly (each rounded to its element type); None where a value wraps around, is not
    finite or cannot be computed exactly."""
    def resolve(o: int) -> int:
        while o in alias:
            o = alias[o]
        return o

    plan = [(n, op, [(resolve(o), values[resolve(o)]) for o in operands], element_of(op))
            for n, op, operands in order]
    result = resolve(root)

    def run(iv: int | float) -> int | float | None:
        env: dict[int, int | float] = {head: iv}
        g.budget.spend(SIMULATED_COST * max(1, len(plan)))
        for n, op, operands, elem in plan:
            v = evaluate(op, [env.get(o, c) for o, c in operands], True, elem)
            if isinstance(v, int):
                if is_int(elem) and not fits(v, elem):
                    return None
            elif not isinstance(v, float) or not math.isfinite(v):
                return None
            env[n] = v
        out = env.get(result, values[result])
        return out if isinstance(out, (int, float)) else None

    return run


def _simulated(g: Graph, values: list[Value], loop: Loop) -> tuple[int, int] | None:
    """The count found by running the loop on its counter alone, for a condition computed
    from one carried counter and constants (`(t < T) & True`, `t // 4 < T // 4`, `t * 4 <
    T`, `c < 8.0`) and a body that computes the counter's next value from it and constants
    alone (`t + 1`, `i * 2`, `c + 1.0`): exact arithmetic in the counter's own types (a float
    rounded as the program rounds it), and no count at all if a value would wrap around or
    not be finite, or the loop would run more than MAX_SIMULATED steps."""
    if len(loop.body_returns) != 1:
        return None
    cond = _computed_from(g, values, loop.cond_returns[0][0],
                          {n: p for p, n in enumerate(loop.cond_args)})
    if cond is None or len(cond[2]) != 1:
        return None
    order, alias, read = cond
    p = next(iter(read))
    if p >= len(loop.operands) or p >= len(loop.body_args) or p >= len(loop.body_returns[0]):
        return None
    start = values[loop.operands[p]]
    update = _computed_from(g, values, loop.body_returns[0][p], {loop.body_args[p]: p})
    if not isinstance(start, (int, float)) or update is None or update[2] != {p}:
        return None  # the next value reads something besides the counter (data), or nothing
    holds = _runner(g, values, order, alias, loop.cond_args[p], loop.cond_returns[0][0])
    advance = _runner(g, values, update[0], update[1], loop.body_args[p],
                      loop.body_returns[0][p])
    iv: int | float | None = start
    for n in range(MAX_SIMULATED + 1):
        test = None if iv is None else holds(iv)
        if test is None:
            return None
        if not test:
            return n, p
        iv = advance(iv)  # type: ignore[arg-type]
    return None


def _affine(g: Graph, values: list[Value], n: int,
            heads: dict[int, int]) -> tuple[int, int, int] | None:
    """(carried position of the counter, sign, offset) when `n` is `sign * iv + offset` for a
    counter `iv` of the condition's arguments: `start + 4 <= T` and `T - start > 0` compare
    the counter too. A few levels of `+ c` and `- c` are peeled; anything else is None."""
    sign, offset = 1, 0
    for _ in range(8):
        n = origin(g, n)
        if n in heads:
            return heads[n], sign, offset
        found = _producer(g, n)
        if found is None or found[1].name not in ("stablehlo.add", "stablehlo.subtract") or (
                len(found[0].operands) != 2):
            return None
        a, b = found[0].operands
        ca, cb = _int_value(values, a), _int_value(values, b)
        if cb is not None:  # iv + c, iv - c
            offset += sign * cb if found[1].name == "stablehlo.add" else -sign * cb
            n = a
        elif ca is not None:  # c + iv, c - iv
            offset += sign * ca
            if found[1].name == "stablehlo.subtract":
                sign = -sign
            n = b
        else:
            return None
    return None


def counter_step(g: Graph, values: list[Value], loop: Loop, ret: tuple[int, ...],
                 p: int) -> int | None:
    """The constant the body adds to carried value p (`iv + c`, `c + iv`, `iv - c`)."""
    if p >= len(ret):
        return None
    found = _producer(g, origin(g, ret[p]))
    if found is None or found[1].name not in ("stablehlo.add", "stablehlo.subtract"):
        return None
    step, op = found
    if len(step.operands) != 2:
        return None
    a, b = (origin(g, o) for o in step.operands)
    iv = loop.body_args[p]
    if a == iv and _int_value(values, step.operands[1]) is not None:
        c = _int_value(values, step.operands[1])
        return c if op.name == "stablehlo.add" else -c  # type: ignore[operator]
    if b == iv and op.name == "stablehlo.add":
        return _int_value(values, step.operands[0])
    return None
