"""Read stage B's source-location table of one program: which line of the submission each op
came from, so a requirement's evidence can name the line (`solution.py:14`) beside its ops.

The locations were recorded by stage A's export, in the learner's own process: a pointer the
submission chose, never evidence. So the table is only read, never believed: an entry counts
only if it names the submission file (the name stage A compiled it under, not jax's files nor
any other path), a line within the submitted source, and an op index; `Op.index` and the op
name must then agree with the verified program the rule read (jaxjudge.analysis.region). Anything
else in the file (not JSON, the wrong shapes, huge numbers, a megabyte file name) is skipped:
a forged table costs the learner their own lines, never a verdict.
"""

from __future__ import annotations

import json

LINES_SUFFIX = ".lines.json"
MAX_LINES_BYTES = 1 << 20  # what the grader reads of one table (stage B writes <= 4,096 entries)
MAX_ENTRIES = 4096
MAX_OP_INDEX = 200_000  # jaxjudge.analysis.stablehlo.MAX_OPS
MAX_OP_NAME = 128


def source_line_count(source: bytes) -> int:
    """The number of lines Python numbers in this source (the last one may lack its newline)."""
    text = source.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return text.count(b"\n") + (0 if text.endswith(b"\n") or not text else 1)


def located(raw: str | None, filename: str, n_lines: int) -> dict[int, tuple[str, int]]:
    """Op index -> (op name, line) for the table's entries that name `filename` at a line in
    1..n_lines; {} for a missing or malformed table."""
    if not raw or len(raw) > MAX_LINES_BYTES:
        return {}
    try:
        table = json.loads(raw)
    except (ValueError, RecursionError):
        return {}
    if not isinstance(table, list):
        return {}
    out: dict[int, tuple[str, int]] = {}
    for entry in table[:MAX_ENTRIES]:
        if not (isinstance(entry, list) and len(entry) == 4):
            continue
        index, name, file, line = entry
        if (
            type(index) is int and 0 <= index <= MAX_OP_INDEX
            and isinstance(name, str) and 0 < len(name) <= MAX_OP_NAME
            and file == filename
            and type(line) is int and 1 <= line <= n_lines
        ):
            out.setdefault(index, (name, line))
    return out
