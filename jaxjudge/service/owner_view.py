"""What of a report only the submission's owner sees: the lines of their source a traceback
quotes, and what their program printed.

Every reader may read every report (verdicts, scores and messages are public), but a
submission's source is its owner's alone (#23, My attempts), and a traceback carries it line by
line: `File "submission.py", line 3, in solve` is followed by the line itself, indented, and a
caret line under it. Another reader gets the frame (file and line number) without the quoted
lines. The program's own output (its prints, and warnings, which quote the source line too) is
the owner's as well.
"""

from __future__ import annotations

import re

from jaxjudge.grading.report import Report

# A traceback frame or a SyntaxError's location: the indented lines after it quote the source.
_FRAME = re.compile(r'^\s*File "[^"\n]*", line \d+')
HIDDEN = "    (the source line is shown to its owner only)"


def without_source(text: str) -> str:
    """`text` with the source lines a traceback quotes replaced by one HIDDEN line per frame."""
    if "File " not in text:
        return text
    out: list[str] = []
    quoting = False
    for line in text.split("\n"):
        if _FRAME.match(line):
            out.append(line)
            quoting = True
        elif quoting and line[:1] in (" ", "\t"):
            if out[-1] != HIDDEN:
                out.append(HIDDEN)
        else:
            quoting = False
            out.append(line)
    return "\n".join(out)


def for_others(report: Report) -> Report:
    """The report as a reader who is not the submission's owner sees it."""
    return report.model_copy(update={
        "message": without_source(report.message),
        "summary": without_source(report.summary),
        "output": "",
        "tests": [t.model_copy(update={"message": without_source(t.message)})
                  for t in report.tests],
        "requirements": [r.model_copy(update={"message": without_source(r.message)})
                         for r in report.requirements],
    })
