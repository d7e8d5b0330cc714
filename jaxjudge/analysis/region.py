"""Find the `Region` a rule decided on: the ops it has in hand plus the ops that feed them.

A rule knows the op it decided on (the too-large value, the mixed-type dot, the loop, the
activation the backward pass reads); a learner recognises their code better with the line or
two that computed its operands, so `region_of` adds the producers of the ops' operands in the
same function (one level, then a second while the excerpt is short). Bounded by MAX_REGION_OPS
and by one walk of the functions that hold the ops.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from jaxjudge.analysis.exported import ProgramInfo, Region
from jaxjudge.analysis.stablehlo import Module, Op

MAX_REGION_OPS = 10
MAX_FOCUS = 4  # ops decided on that are shown (the first ones, in program order)


def _walk(fn: Op) -> list[Op]:
    """Every op of a function in program order (pre-order: an op before its regions' ops)."""
    out: list[Op] = []
    stack = [op for region in reversed(fn.regions) for block in reversed(region)
             for op in reversed(block.ops)]
    while stack:
        op = stack.pop()
        out.append(op)
        for region in reversed(op.regions):
            for block in reversed(region):
                stack.extend(reversed(block.ops))
    return out


def noted(program: ProgramInfo, note: str) -> Region:
    """A region that is only a remark about a program (no op to show: "no loop", sizes)."""
    return Region(signature=program.signature, ops=(), note=note)


def region_of(module: Module, targets: Iterable[Op | None], program: ProgramInfo,
              depth: int = 2, note: str = "") -> Region | None:
    """The region around `targets` (ops of `module`, None entries ignored), in the first
    function that holds one of them; None when none is found."""
    wanted = {id(op) for op in targets if op is not None}
    if not wanted:
        return None
    functions = module.functions()
    publics = [n for n, f in functions.items() if f.attrs.get("sym_visibility") == "public"]
    entry = "main" if "main" in functions else (publics[0] if len(publics) == 1 else "")
    for name, fn in functions.items():
        order = _walk(fn)
        hits = [i for i, op in enumerate(order) if id(op) in wanted][:MAX_FOCUS]
        if not hits:
            continue
        producer: dict[str, int] = {}
        for i, op in enumerate(order):
            for r in op.results:
                producer.setdefault(r, i)
        chosen = set(hits)
        frontier = list(hits)
        for _ in range(max(0, depth)):
            nxt = []
            for i in frontier:
                for operand in order[i].operands:
                    j = producer.get(operand)
                    if j is not None and j not in chosen and len(chosen) < MAX_REGION_OPS:
                        chosen.add(j)
                        nxt.append(j)
            frontier = nxt
        picked = sorted(chosen)
        args = _arg_names(fn, program) if name == entry else {}
        return Region(
            signature=program.signature,
            ops=tuple(order[i] for i in picked),
            focus=frozenset(k for k, i in enumerate(picked) if i in hits),
            args=args,
            note=note or f"in func @{name}",
            lines=source_lines([order[i] for i in hits], program),
        )
    return None


def readers_of(module: Module, program: ProgramInfo, argument: str) -> list[Op]:
    """The first ops (at most MAX_FOCUS) that read input `argument` of the entry function,
    followed through calls into the callee's parameter (jax.export's `main` only forwards its
    arguments to the function that computes)."""
    functions = module.functions()
    entry = functions.get("main")
    if entry is None or argument not in program.args or not entry.regions or not entry.regions[0]:
        return []
    params = entry.regions[0][0].args
    position = program.args.index(argument)
    todo = [(entry, params[position])] if position < len(params) else []
    found: list[Op] = []
    seen: set[tuple[int, str]] = set()
    while todo and len(found) < MAX_FOCUS and len(seen) < 16:
        fn, value = todo.pop(0)
        seen.add((id(fn), value))
        for op in _walk(fn):
            if value not in op.operands:
                continue
            callee = functions.get(op.attrs.get("callee", "")) if op.name == "func.call" else None
            if callee is None:
                found.append(op)
                continue
            args = callee.regions[0][0].args if callee.regions and callee.regions[0] else []
            k = op.operands.index(value)
            if k < len(args) and (id(callee), args[k]) not in seen:
                todo.append((callee, args[k]))
    return found[:MAX_FOCUS]


def source_lines(ops: Sequence[Op], program: ProgramInfo) -> tuple[int, ...]:
    """The submission's lines the ops came from (sorted, at most MAX_FOCUS): an op counts only
    if the location table names this very op (same index, same op name)."""
    lines = set()
    for op in ops:
        entry = program.located.get(op.index)
        if entry is not None and entry[0] == op.name:
            lines.add(entry[1])
    return tuple(sorted(lines)[:MAX_FOCUS])


def _arg_names(fn: Op, program: ProgramInfo) -> dict[str, str]:
    """main's block arguments -> the input paths they carry."""
    if not fn.regions or not fn.regions[0]:
        return {}
    block_args: Sequence[str] = fn.regions[0][0].args
    return {a: p for a, p in zip(block_args, program.args, strict=False)}
