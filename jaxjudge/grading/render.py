"""Render a `Report` for people and for other graders: plain text, Markdown, Gradescope JSON.

Every renderer is a pure function of the report (no clock, no environment), so course tooling can
diff its output and the golden tests can pin it byte for byte. Hidden tests are rendered by name,
verdict and message only: a report never carries their inputs, and nothing here adds them.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping
from typing import Any, Literal

from jaxjudge.grading.report import Report, RequirementResult, TestResult, Verdict
from jaxjudge.grading.summary import summarize

GradescopeVisibility = Literal["hidden", "after_due_date", "after_published", "visible"]

# Gradescope shows each test's `output` in a box; keep boxes readable and results.json small.
_MAX_TEST_OUTPUT = 4000
_MAX_SUBMISSION_OUTPUT = 8000


# -- small helpers -------------------------------------------------------------------------------
def fmt_points(value: float) -> str:
    """Points without float noise: 70 -> "70", 46.666666 -> "46.67"."""
    if not math.isfinite(value):
        return str(value)
    rounded = round(value, 2)
    if rounded == int(rounded):
        return str(int(rounded))
    return f"{rounded:.2f}".rstrip("0").rstrip(".")


def _score(value: float) -> float:
    """A JSON score: rounded so that sums of evenly split shares do not show 69.99999999."""
    return round(float(value), 4)


# Control characters a terminal (or a log viewer) acts on: C0 but newline and tab, DEL, C1, and
# the bidirectional overrides that make text display in another order than it reads ("Trojan
# source"). Each is shown as a visible escape instead, so a message cannot clear a screen, move
# the cursor, set a window title or hide part of itself.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# Everything Markdown (CommonMark + GFM tables, strikethrough, GitHub math) acts on anywhere in a
# line or at its start: escaped with a backslash, which CommonMark defines for all of them.
_MD_ACTIVE = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~&$=])")


def plain(text: str) -> str:
    """`text` safe for a terminal: control characters (ESC sequences included) become visible
    escapes such as `\\x1b`; newlines and tabs stay."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... ({len(text) - limit} more characters truncated)"


def _test_status(test: TestResult) -> str:
    if test.verdict is Verdict.SKIPPED:
        return "SKIP"
    return "PASS" if test.verdict is Verdict.ACCEPTED else "FAIL"


def _test_line(test: TestResult) -> str:
    parts = [str(test.verdict)]
    if test.max_abs_error is not None:
        parts.append(f"max abs error {test.max_abs_error:.3g}")
    if test.message:
        parts.append(test.message)
    return "; ".join(parts)


def _requirement_line(req: RequirementResult) -> str:
    line = req.message or ("satisfied" if req.passed else "not satisfied")
    where = source_ref(req)
    return f"{line} (at {where})" if where else line


def source_ref(req: RequirementResult) -> str:
    """`solution.py:14, 21`: the submission's lines the requirement's marked ops came from."""
    ev = req.evidence
    if ev is None or not ev.source_lines or not ev.source_file:
        return ""
    return f"{ev.source_file}:" + ", ".join(str(n) for n in ev.source_lines)


def summary_line(report: Report) -> str:
    """The report's one-line summary (computed for reports stored before it existed)."""
    return report.summary or summarize(report)


def repeats_details(report: Report) -> bool:
    """The message only restates the requirement list (or says all is well): the summary line
    replaces it instead of repeating it."""
    if report.verdict in (Verdict.ACCEPTED, Verdict.REQUIREMENT_FAILED):
        return True
    return "\n" not in report.message.strip() and (
        " ".join(report.message.split()).rstrip(".") in summary_line(report))


def _total_seconds(report: Report) -> float | None:
    if not report.timings:
        return None
    if "total" in report.timings:
        return report.timings["total"]
    return sum(report.timings.values())


# -- plain text ----------------------------------------------------------------------------------
def to_text(report: Report) -> str:
    """A terminal-friendly summary (no colour codes, so it is also fine in logs and emails)."""
    lines = [
        f"Problem:  {report.problem} ({report.mode})",
        f"Verdict:  {report.verdict}",
        f"Score:    {fmt_points(report.score)} / {fmt_points(report.max_score)}",
        f"Summary:  {plain(summary_line(report))}",
    ]
    if report.message and not repeats_details(report):
        lines += ["", plain(report.message)]
    if report.tests:
        lines += ["", "Tests:"]
        width = max(len(t.name) for t in report.tests)
        for t in report.tests:
            kind = "visible" if t.visible else "hidden "
            pts = f"{fmt_points(t.score)}/{fmt_points(t.max_score)}"
            lines.append(
                f"  {_test_status(t)}  {t.name:<{width}}  {kind}  {pts:>9}  "
                + plain(_test_line(t))
            )
    if report.requirements:
        lines += ["", "Requirements:"]
        width = max(len(r.name) for r in report.requirements)
        for r in report.requirements:
            mark = "PASS" if r.passed else "FAIL"
            pts = f"{fmt_points(r.score)}/{fmt_points(r.max_score)}"
            lines.append(
                f"  {mark}  {r.name:<{width}}  {r.level:<7}  {pts:>9}  "
                + plain(_requirement_line(r))
            )
            if r.evidence is not None and not r.passed:
                lines.append(f"        in the program for {plain(r.evidence.program)}:")
                lines += ["        " + plain(line) for line in r.evidence.text.splitlines()]
    if report.memory is not None:
        lines += ["", "Memory:   " + plain(report.memory.summary)]
    if report.output:
        lines += ["", "Output of your program:"]
        lines += ["  | " + line for line in plain(report.output).splitlines()]
    return "\n".join(lines) + "\n"


# -- Markdown ------------------------------------------------------------------------------------
def _md_cell(text: str) -> str:
    """One table cell of inert text: every Markdown-active character backslash-escaped (no
    link, image, HTML, emphasis or cell break can come from a message), control characters made
    visible, newlines folded into <br>."""
    text = _MD_ACTIVE.sub(r"\\\1", plain(text.replace("\r\n", "\n")))
    return text.replace("\n", "<br>")


def _md_fence(text: str) -> str:
    """A code fence longer than any backtick run inside, so submission output cannot escape it."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text.rstrip(chr(10))}\n{fence}"


def to_markdown(report: Report) -> str:
    """GitHub-flavoured Markdown: for LMS comments, issue bots and the README of a results repo."""
    lines = [
        f"## {report.problem}: `{report.verdict}`",
        "",
        f"**Score:** {fmt_points(report.score)} / {fmt_points(report.max_score)}"
        f" &nbsp; **Mode:** {report.mode}",
        "",
        f"**{_md_cell(summary_line(report))}**",
    ]
    if report.message and not repeats_details(report):
        lines += ["", _md_cell(report.message).replace("<br>", "  \n")]
    if report.tests:
        lines += [
            "",
            "| Test | Visibility | Result | Points | Details |",
            "| --- | --- | --- | ---: | --- |",
        ]
        for t in report.tests:
            mark = {"PASS": "✅", "FAIL": "❌", "SKIP": "⏭️"}[_test_status(t)]
            lines.append(
                f"| {_md_cell(t.name)} | {'visible' if t.visible else 'hidden'} "
                f"| {mark} `{t.verdict}` | {fmt_points(t.score)}/{fmt_points(t.max_score)} "
                f"| {_md_cell(_test_line(t))} |"
            )
    if report.requirements:
        lines += [
            "",
            "| Requirement | Level | Result | Points | Details |",
            "| --- | --- | --- | ---: | --- |",
        ]
        for r in report.requirements:
            mark = "✅ passed" if r.passed else "❌ failed"
            lines.append(
                f"| {_md_cell(r.name)} | {r.level} | {mark} "
                f"| {fmt_points(r.score)}/{fmt_points(r.max_score)} "
                f"| {_md_cell(_requirement_line(r))} |"
            )
    if report.memory is not None:
        lines += ["", f"**Memory:** {_md_cell(report.memory.summary)}"]
    for r in report.requirements:
        if r.evidence is not None and not r.passed:
            text = f"// the program for {r.evidence.program}\n{r.evidence.text}"
            lines += ["", f"<details><summary>The program part {html.escape(r.name)} refers "
                          "to</summary>", "", _md_fence(plain(text)), "", "</details>"]
    if report.output:
        lines += ["", "<details><summary>Output of your program</summary>", ""]
        lines += [_md_fence(plain(report.output)), "", "</details>"]
    return "\n".join(lines) + "\n"


# -- Gradescope ----------------------------------------------------------------------------------
def _gs_test(
    test: TestResult, prefix: str, hidden_visibility: GradescopeVisibility
) -> dict[str, Any]:
    return {
        "name": f"{prefix}test {test.name}",
        "score": _score(test.score),
        "max_score": _score(test.max_score),
        "status": "passed" if test.verdict is Verdict.ACCEPTED else "failed",
        "output": _truncate(plain(_test_line(test)), _MAX_TEST_OUTPUT),
        "visibility": "visible" if test.visible else hidden_visibility,
        "tags": ["visible-test" if test.visible else "hidden-test"],
    }


def _gs_requirement(req: RequirementResult, prefix: str) -> dict[str, Any]:
    return {
        "name": f"{prefix}requirement {req.name}",
        "score": _score(req.score),
        "max_score": _score(req.max_score),
        "status": "passed" if req.passed else "failed",
        "output": _truncate(plain(_requirement_line(req)), _MAX_TEST_OUTPUT),
        "visibility": "visible",
        "tags": ["requirement", req.level],
    }


def _gs_summary(report: Report) -> str:
    text = (
        f"{report.problem}: {report.verdict} "
        f"({fmt_points(report.score)}/{fmt_points(report.max_score)})"
    )
    text += f"\n{summary_line(report)}"
    if report.message and not repeats_details(report):
        text += f"\n{report.message}"
    if report.output:
        text += "\n\nOutput of your program:\n" + _truncate(report.output, _MAX_SUBMISSION_OUTPUT)
    return plain(text)


def to_gradescope(
    report: Report, *, hidden_visibility: GradescopeVisibility = "after_published"
) -> dict[str, Any]:
    """Gradescope's autograder `results.json` for one report.

    One Gradescope test per judge test and per requirement. Examples and requirements are
    "visible"; hidden tests default to "after_published" (students see pass/fail and the message
    once grades are published, never the inputs). The top-level `score` is the judge's score, so
    Gradescope does not re-add the per-test scores.
    """
    return to_gradescope_set({report.problem: report}, hidden_visibility=hidden_visibility)


def to_gradescope_set(
    reports: Mapping[str, Report], *, hidden_visibility: GradescopeVisibility = "after_published"
) -> dict[str, Any]:
    """One `results.json` for a student's whole problem set: tests are prefixed by problem id."""
    multi = len(reports) > 1
    tests: list[dict[str, Any]] = []
    summaries: list[str] = []
    seconds: list[float] = []
    for problem_id in sorted(reports) if multi else list(reports):
        report = reports[problem_id]
        prefix = f"{problem_id}: " if multi else ""
        tests += [_gs_test(t, prefix, hidden_visibility) for t in report.tests]
        tests += [_gs_requirement(r, prefix) for r in report.requirements]
        summaries.append(_gs_summary(report))
        total = _total_seconds(report)
        if total is not None:
            seconds.append(total)
    result: dict[str, Any] = {
        "score": _score(sum(r.score for r in reports.values())),
        "output": "\n\n".join(summaries),
        "output_format": "text",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {
            "jaxjudge": {
                pid: {
                    "verdict": str(r.verdict),
                    "mode": r.mode,
                    "max_score": _score(r.max_score),
                    "versions": dict(sorted(r.versions.items())),
                }
                for pid, r in sorted(reports.items())
            }
        },
    }
    if seconds:
        result["execution_time"] = math.ceil(sum(seconds))
    return result


_DISPLAY_MATH = re.compile(r"\$\$(.+?)\$\$", re.DOTALL)
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\s)([^$\n]+?)(?<!\s)\$(?!\$)")


def math_as_code(markdown: str) -> str:
    """A statement for a terminal: TeX math kept verbatim as code (display math as a code block,
    inline math as a code span), so a Markdown renderer does not eat its backslashes, turn its
    subscripts into italics or a leading `+` into a bullet."""
    text = _DISPLAY_MATH.sub(lambda m: "\n```\n" + m.group(1).strip() + "\n```\n", markdown)
    return _INLINE_MATH.sub(lambda m: "`" + m.group(1).replace("`", "'") + "`", text)
