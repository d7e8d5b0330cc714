"""The verified exported programs, parsed once for the program-level structure rules.

Every structure rule (sizes, dot types, loops, growth) starts from the same list: each program
parsed by the capped parser, or an `Unreadable` saying why none can be read (no program,
malformed ones, more text than one grade's analyses may read, an unreadable one).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.analysis.stablehlo import Module, Op, ParseError, parse_module

MAX_TOTAL_CHARS = 8 * 1024 * 1024  # all programs of one grade: parsing is linear in this


@dataclass(frozen=True)
class Unreadable:
    """Why no program could be analyzed (none, malformed, more text than MAX_TOTAL_CHARS, one
    the parser rejects): the rule that asked fails with this message."""

    message: str


@dataclass
class Parsed:
    program: ProgramInfo
    module: Module


def parse_programs(programs: Sequence[ProgramInfo]) -> list[Parsed] | Unreadable:
    """Parse every program, or an `Unreadable` saying why the rule cannot run (no program,
    malformed ones, more text than one grade's analyses may read, or an unreadable one)."""
    if not isinstance(programs, Sequence) or isinstance(programs, str | bytes) or not programs:
        return Unreadable("No exported program was available to check.")
    if not all(isinstance(p, ProgramInfo) and isinstance(p.text, str) for p in programs):
        return Unreadable("The exported programs are malformed and could not be checked.")
    total = sum(len(p.text) for p in programs)
    if total > MAX_TOTAL_CHARS:
        return Unreadable(
            f"The exported programs are too large to verify ({total >> 20} MiB of StableHLO "
            f"over {len(programs)} input shapes; at most {MAX_TOTAL_CHARS >> 20} MiB are "
            "analyzed): remove dead computations from solve.")
    out = []
    for p in programs:
        try:
            out.append(Parsed(p, parse_module(p.text)))
        except ParseError as exc:
            return Unreadable(f"The exported program for input shapes {p.signature} "
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
