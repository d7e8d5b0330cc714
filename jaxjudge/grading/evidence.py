"""Print a rule's `Region` as a requirement's `Evidence`: a few StableHLO ops a learner reads.

Each op is one line in a readable form of the generic MLIR the parent parsed (results, op name,
operands, the attributes that say what it does, result types), main's arguments named by their
input paths in a comment line, the ops the rule decided on marked with `>`. The text came out of
a sandbox (stage B printed it, from a program stage A built): every line is made inert (control
characters shown as escapes) and cut, and the whole is bounded, so an op named to look like a
message, or a type a megabyte long, cannot flood or fake the report.
"""

from __future__ import annotations

import re

from jaxjudge.analysis.exported import ProgramInfo, Region
from jaxjudge.analysis.stablehlo import Op
from jaxjudge.grading.render import plain
from jaxjudge.grading.report import Evidence, RequirementResult
from jaxjudge.problems.package import Problem

MAX_LINE_CHARS = 160
MAX_EVIDENCE_CHARS = 2400
_SHOWN_ATTRS = ("callee", "comparison_direction", "value")
_MULTI = re.compile(r"^(%[\w$.\-]+)#(\d+)$")


def _cut(text: str, limit: int = MAX_LINE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _results(names: list[str]) -> str:
    """["%3#0", "%3#1"] -> "%3:2" (as MLIR prints them), others joined."""
    if len(names) > 1:
        first = _MULTI.match(names[0])
        if first and all(_MULTI.match(n) for n in names):
            return f"{first.group(1)}:{len(names)}"
    return ", ".join(names)


def _attrs(op: Op) -> str:
    shown = []
    for key in _SHOWN_ATTRS:
        value = op.attrs.get(key)
        if value is not None and len(value) <= 48:
            shown.append(f"{key} = {value}")
    return " {" + ", ".join(shown) + "}" if shown else ""


def op_line(op: Op) -> str:
    """`%5 = stablehlo.tanh(%4) : tensor<2x3xf32>` for one op (regions summarized)."""
    results = _results(op.results)
    head = f"{results} = " if results else ""
    operands = ", ".join(op.operands)
    if len(op.operands) > 8:
        operands = ", ".join(op.operands[:8]) + f", … ({len(op.operands)} operands)"
    types = op.type.rpartition("->")[2] if "->" in op.type else op.type
    line = f"{head}{op.name}({operands}){_attrs(op)}"
    if op.regions:
        sizes = [sum(len(b.ops) for b in region) for region in op.regions]
        line += " { " + ", ".join(f"region {i + 1}: {n} ops" for i, n in enumerate(sizes)) + " }"
    if types:
        line += f" : {types}"
    return line


def excerpt(region: Region, source_file: str = "") -> Evidence:
    """The bounded, inert text of one region, and the submission's lines its marked ops came
    from (named by `source_file`)."""
    lines: list[str] = []
    used_args = [a for a in region.args if any(a in op.operands for op in region.ops)]
    if region.note:
        lines.append("  // " + region.note)
    if used_args:
        lines.append("  // " + ", ".join(f"{a} = {region.args[a]}" for a in used_args))
    # Cut before they are counted: a function named with 3,000 characters must not use up
    # the budget the ops need.
    lines = [_cut(plain(line).replace("\n", " ")) for line in lines]
    focus: list[int] = []
    total = sum(len(line) + 1 for line in lines)
    for k, op in enumerate(region.ops):
        marked = k in region.focus
        line = ("> " if marked else "  ") + op_line(op)
        line = _cut(plain(line).replace("\n", " "))
        if total + len(line) + 1 > MAX_EVIDENCE_CHARS - 40:  # room for the line below
            lines.append(f"  // … {len(region.ops) - k} more ops")
            break
        if marked:
            focus.append(len(lines))
        lines.append(line)
        total += len(line) + 1
    lines = [_cut(plain(line).replace("\n", " ")) for line in lines]
    shown = list(region.lines) if source_file else []
    return Evidence(program=_cut(plain(region.signature), 120), text="\n".join(lines),
                    focus=focus, source_lines=shown, source_file=source_file if shown else "")


_OP_NAME = re.compile(r'"([a-z_]+\.[a-z_0-9]+)"\(')


def census(program: ProgramInfo) -> Evidence:
    """For a rule that names no operation: what the program is made of, by op count (the
    structural ops that only hold others left out)."""
    counts: dict[str, int] = {}
    for name in _OP_NAME.findall(program.text):
        if not name.startswith(("func.", "builtin.")) and not name.endswith(".return"):
            counts[name] = counts.get(name, 0) + 1
    total = sum(counts.values())
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:8]
    listed = ", ".join(f"{n} {name.removeprefix('stablehlo.')}" for name, n in top)
    note = f"this program has {total} ops: {listed}" if top else "this program has no ops"
    return excerpt(Region(signature=program.signature, ops=(), note=note))


def lend_evidence(problem: Problem, reqs: list[RequirementResult]) -> None:
    """A spec-level requirement shows the program region of the program-level requirement that
    corroborates it: what stage A reported is never shown as evidence on its own."""
    program = {r.name: r for r in reqs if r.level == "program" and r.evidence is not None}
    declared = {r.name: r for r in problem.requirements}
    for res in reqs:
        req = declared.get(res.name)
        if res.level != "spec" or res.evidence is not None or req is None:
            continue
        lender = next((program[n] for n in problem.corroborators(req) if n in program), None)
        if lender is not None:
            res.evidence = lender.evidence.model_copy() if lender.evidence else None
