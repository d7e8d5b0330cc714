"""The one-line verdict summary (jaxjudge/grading/summary.py): counts, the first failure, and
what the renderers show instead of the repeated paragraph."""

from __future__ import annotations

from jaxjudge.grading import render
from jaxjudge.grading.report import Report, RequirementResult, Verdict
from jaxjudge.grading.report import TestResult as TResult  # pytest would collect Test*
from jaxjudge.grading.summary import MAX_SUMMARY_CHARS, summarize

LONG = (
    "The backward pass reads the forward tanh of x @ params['w1'] (the saved activation) "
    "instead of recomputing it (no checkpoint, or a policy that saves everything). To "
    "rematerialize it, wrap the block in jax.checkpoint."
)


def _report(verdict: Verdict, reqs: list[RequirementResult], message: str = "",
            wrong: int = 0) -> Report:
    tests = [TResult(name=f"example-{i}", visible=True,
                        verdict=Verdict.WRONG_ANSWER if i <= wrong else Verdict.ACCEPTED,
                        message="grads.w1 differs by 0.5" if i <= wrong else "")
             for i in (1, 2, 3)]
    return Report(verdict=verdict, problem="p", mode="submit", message=message, tests=tests,
                  requirements=reqs)


def _req(name: str, passed: bool, message: str, level: str = "program") -> RequirementResult:
    return RequirementResult(name=name, level=level, passed=passed,  # type: ignore[arg-type]
                             message=message)


def test_requirement_failure_names_the_program_level_failure_in_one_line() -> None:
    report = _report(Verdict.REQUIREMENT_FAILED, [
        _req("differentiated-checkpoint", False, "No jax.checkpoint region was found.", "spec"),
        _req("tanh-rematerialized", False, LONG),
        _req("other", True, "fine"),
    ], message="All tests pass, but a requirement failed: " + LONG)
    line = summarize(report)
    assert line == (
        "1 of 3 requirements hold; tanh-rematerialized failed: the backward pass reads the "
        "forward tanh of x @ params['w1'] instead of recomputing it (all 3 tests pass)"
    )
    assert "\n" not in line and len(line) <= MAX_SUMMARY_CHARS
    # The text and Markdown renderers show it instead of repeating the requirement messages.
    text = render.to_text(report)
    assert f"Summary:  {line}" in text
    assert "All tests pass, but a requirement failed" not in text
    assert text.count("No jax.checkpoint region was found.") == 1


def test_accepted_wrong_answer_and_errors() -> None:
    ok = _report(Verdict.ACCEPTED, [_req("r", True, "fine")], "All 3 tests pass.")
    assert summarize(ok) == "All 3 tests pass and 1 of 1 requirement holds."
    wa = _report(Verdict.WRONG_ANSWER, [_req("r", True, "fine")], "1 of 3 ...", wrong=1)
    assert summarize(wa) == ("2 of 3 tests pass; first wrong: example-1 (grads.w1 differs by "
                             "0.5); 1 of 1 requirement holds")
    err = _report(Verdict.RUNTIME_ERROR, [], "Test example-1: the program failed\non this input")
    assert summarize(err) == "Runtime error: Test example-1: the program failed on this input"
    huge = _report(Verdict.COMPILE_ERROR, [], "x" * 10_000)
    assert len(summarize(huge)) <= MAX_SUMMARY_CHARS


def test_reports_from_earlier_releases_get_a_summary_when_rendered() -> None:
    old = _report(Verdict.ACCEPTED, [], "All 3 tests pass.")
    assert old.summary == ""
    assert render.summary_line(old) == "All 3 tests pass."


def test_a_traceback_is_summarized_by_its_exception_line_and_still_shown() -> None:
    message = ('File "submission.py", line 6\n    def solve(params, x, y)\n'
               '                           ^\nSyntaxError: expected \':\'')
    report = _report(Verdict.COMPILE_ERROR, [], message)
    assert summarize(report) == "Compile error: SyntaxError: expected ':' (line 6)"
    report.summary = summarize(report)
    assert not render.repeats_details(report)
    assert "                           ^" in render.to_text(report)
