"""The one-line verdict summary: what a learner reads first, above the details.

`Report.message` stays the full paragraph (a requirement failure lists every failing
requirement's message, a runtime error carries its traceback); the summary says, in one line,
how many tests and requirements hold and the first thing to fix, so that a page or a terminal can
show it instead of repeating what the requirement list and the test table already say. A pure
function of the report, so old stored reports get one too.
"""

from __future__ import annotations

import re

from jaxjudge.grading.report import Report, RequirementResult, Verdict

MAX_SUMMARY_CHARS = 240
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")
_NOT_CHECKED = "not checked"
_ASIDE = re.compile(r" \([^()]*\)")


def _first_sentence(text: str, limit: int = 160) -> str:
    """The first sentence of `text` on one line, at most `limit` characters (with an ellipsis)."""
    flat = " ".join(text.split())
    head = _SENTENCE_END.split(flat, maxsplit=1)[0].rstrip(".")
    if len(head) > limit // 2:  # long: asides in parentheses go first
        head = _ASIDE.sub("", head)
    if len(head) > limit:
        head = head[: limit - 1].rstrip() + "…"
    return head


def _lower_first(text: str) -> str:
    """"The forward tanh ..." -> "the forward tanh ..." (but "JAX", "W1" stay as they are)."""
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        return text[0].lower() + text[1:]
    return text


def _requirements(reqs: list[RequirementResult]) -> tuple[str, RequirementResult | None]:
    """("2 of 3 requirements hold", the first failure that was checked) or ("", None)."""
    if not reqs:
        return "", None
    held = sum(1 for r in reqs if r.passed)
    failed = [r for r in reqs if not r.passed and not r.message.startswith(_NOT_CHECKED)]
    noun = "requirement holds" if len(reqs) == 1 else "requirements hold"
    counted = f"{held} of {len(reqs)} {noun}"
    # Prefer a program-level failure (it decides) over the spec-level one that restates it.
    failed.sort(key=lambda r: r.level != "program")
    return counted, (failed[0] if failed else None)


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b.*$")
_LINE_NO = re.compile(r'line (\d+)')


def _error_line(message: str) -> str:
    """An error message in a sentence: a traceback's exception line (with the line it points
    at), else the first sentence."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if len(lines) > 1:
        found = [line for line in lines if _EXCEPTION_LINE.match(line)]
        if found:
            at = _LINE_NO.findall(message)
            where = f" (line {at[-1]})" if at else ""
            return _first_sentence(found[-1]) + where
    return _first_sentence(message) if message else ""


def _clip(text: str) -> str:
    return text if len(text) <= MAX_SUMMARY_CHARS else text[: MAX_SUMMARY_CHARS - 1] + "…"


def summarize(report: Report) -> str:
    """One line: "2 of 3 requirements hold; tanh-rematerialized failed: the forward tanh ..."."""
    tests = [t for t in report.tests if t.verdict is not Verdict.SKIPPED]
    passed = sum(1 for t in tests if t.verdict is Verdict.ACCEPTED)
    counted, failure = _requirements(report.requirements)
    why = f"{failure.name} failed: {_lower_first(_first_sentence(failure.message))}" if (
        failure is not None) else ""
    if report.verdict is Verdict.ACCEPTED:
        line = f"All {len(tests)} tests pass"
        line += f" and {counted}." if counted else "."
    elif report.verdict is Verdict.REQUIREMENT_FAILED:
        line = f"{counted}; {why}" if why else f"{counted}."
        if tests:
            line += f" (all {len(tests)} tests pass)"
    elif report.verdict is Verdict.WRONG_ANSWER:
        wrong = [t for t in tests if t.verdict is not Verdict.ACCEPTED]
        line = f"{passed} of {len(tests)} tests pass; first wrong: {wrong[0].name}" if wrong else (
            f"{passed} of {len(tests)} tests pass")
        if wrong and wrong[0].visible and wrong[0].message:
            line += f" ({_first_sentence(wrong[0].message, 80)})"
        if counted:
            line += f"; {counted}"
    else:
        label = str(report.verdict).replace("_", " ")
        first = _error_line(report.message)
        line = f"{label.capitalize()}: {first}" if first else label.capitalize()
    return _clip(line)
