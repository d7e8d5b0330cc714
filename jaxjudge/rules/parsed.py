"""The verified exported programs, parsed once for the program-level structure rules.

Every structure rule (sizes, dot types, loops, growth) starts from the same list: each program
parsed by the capped parser, or one failed outcome saying why none can be read (no program,
malformed ones, more text than one grade's analyses may read, an unreadable one).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from jaxjudge.rules.outcome import ProgramInfo, RuleOutcome
from jaxjudge.rules.program import MAX_TOTAL_CHARS
from jaxjudge.rules.stablehlo import Module, Op, ParseError, parse_module


@dataclass
class Parsed:
    program: ProgramInfo
    module: Module


def parse_programs(programs: Sequence[ProgramInfo]) -> list[Parsed] | RuleOutcome:
    """Parse every program, or a failed outcome saying why the rule cannot run (no program,
    malformed ones, more text than one grade's analyses may read, or an unreadable one)."""
    if not isinstance(programs, Sequence) or isinstance(programs, str | bytes) or not programs:
        return RuleOutcome(False, "No exported program was available to check.")
    if not all(isinstance(p, ProgramInfo) and isinstance(p.text, str) for p in programs):
        return RuleOutcome(False, "The exported programs are malformed and could not be checked.")
    total = sum(len(p.text) for p in programs)
    if total > MAX_TOTAL_CHARS:
        return RuleOutcome(False, (
            f"The exported programs are too large to verify ({total >> 20} MiB of StableHLO "
            f"over {len(programs)} input shapes; at most {MAX_TOTAL_CHARS >> 20} MiB are "
            "analyzed): remove dead computations from solve."))
    out = []
    for p in programs:
        try:
            out.append(Parsed(p, parse_module(p.text)))
        except ParseError as exc:
            return RuleOutcome(False, f"The exported program for input shapes {p.signature} "
                                      f"could not be analyzed ({exc}).")
    return out


def shapes_text(p: ProgramInfo) -> str:
    """"B=3, D=5" for messages (the signature when the program has no dims' values)."""
    return ", ".join(f"{k}={v}" for k, v in sorted(p.dims.items())) or p.signature


def all_ops(module: Module) -> Iterable[tuple[str, Op]]:
    """(function name, op) for every op of every function, nested regions included."""
    for name, fn in module.functions().items():
        stack = [op for region in fn.regions for block in region for op in block.ops]
        while stack:
            op = stack.pop()
            yield name, op
            for region in op.regions:
                for block in region:
                    stack.extend(block.ops)
