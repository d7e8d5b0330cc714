"""Golden tests for every report format: text, Markdown and Gradescope JSON.

The reports are built by hand (fixed timings, fixed versions), so the renderers' output is pinned
byte for byte. After an intended change, regenerate with `JAXJUDGE_UPDATE_GOLDEN=1 pytest
tests/test_render.py` and review the diff of tests/golden/.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from jaxjudge.grading import render
from jaxjudge.grading.report import Report, RequirementResult, Verdict
from jaxjudge.grading.report import TestDetails as TDetails
from jaxjudge.grading.report import (
    TestResult as TResult,  # aliased: pytest would try to collect Test*
)

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("JAXJUDGE_UPDATE_GOLDEN") == "1"
VERSIONS = {"jax": "0.10.2", "grader": "0.1.0", "python": "3.11.7"}


def _req(name: str, level: str, passed: bool, message: str, share: float) -> RequirementResult:
    return RequirementResult(
        name=name, level=level, passed=passed, message=message,  # type: ignore[arg-type]
        score=share if passed else 0.0, max_score=share,
    )


def accepted() -> Report:
    tests = [
        TResult(name="example-1", visible=True, verdict=Verdict.ACCEPTED, max_abs_error=3.2e-8,
                   score=5.0, max_score=5.0,
                   details=TDetails(inputs={"x": [[1.0]]}, expected=1.0, got=1.0)),
        TResult(name="example-2", visible=True, verdict=Verdict.ACCEPTED, max_abs_error=0.0,
                   score=5.0, max_score=5.0),
        *[
            TResult(name=f"hidden-{i}", visible=False, verdict=Verdict.ACCEPTED,
                       max_abs_error=1e-7, score=20.0, max_score=20.0)
            for i in (1, 2, 3)
        ],
    ]
    return Report(
        verdict=Verdict.ACCEPTED, problem="rematerialized-mlp-block", mode="submit",
        message="All 5 tests pass and every requirement holds.", tests=tests,
        requirements=[
            _req("differentiated-checkpoint", "spec", True, "found checkpoint(dots_saveable)", 15),
            _req("tanh-rematerialized", "program", True, "tanh recomputed in the backward pass",
                 15),
        ],
        score=100.0, max_score=100.0, timings={"trace": 2.5, "execute": 1.25, "total": 4.0},
        output="", versions=VERSIONS,
    )


def wrong_answer_hidden() -> Report:
    """Partial credit with thirds: the scores must not print as 13.333333."""
    third = 60 / 3
    tests = [
        TResult(name="example-1", visible=True, verdict=Verdict.ACCEPTED, score=10.0,
                   max_score=10.0, max_abs_error=0.0),
        TResult(name="hidden-1", visible=False, verdict=Verdict.ACCEPTED, score=third,
                   max_score=third),
        TResult(name="hidden-2", visible=False, verdict=Verdict.WRONG_ANSWER,
                   message="grads.w1 differs by 0.5 (tolerance 1e-05)", max_abs_error=0.5,
                   score=0.0, max_score=third),
        TResult(name="hidden-3", visible=False, verdict=Verdict.WRONG_ANSWER,
                   message="loss | grads differ", score=0.0, max_score=third),
    ]
    return Report(
        verdict=Verdict.WRONG_ANSWER, problem="rematerialized-mlp-block", mode="submit",
        message="2 of 4 tests give wrong results. First failing test hidden-2 is hidden: "
                "grads.w1 differs by 0.5 (tolerance 1e-05)",
        tests=tests,
        requirements=[
            _req("differentiated-checkpoint", "spec", False,
                 "no jax.checkpoint region with policy dots_saveable", 10.0),
            _req("tanh-rematerialized", "program", True, "", 10.0),
            _req("no-custom-calls", "program", True, "ok", 10.0),
        ],
        score=10.0 + third + 20.0, max_score=100.0,
        timings={"trace": 3.0, "execute": 2.0},
        output="step 1\nloss = 0.25 | `debug` ```\n", versions=VERSIONS,
    )


def compile_error_run() -> Report:
    return Report(
        verdict=Verdict.COMPILE_ERROR, problem="rematerialized-mlp-block", mode="run",
        message="SyntaxError: invalid syntax (submission.py, line 3)",
        tests=[
            TResult(name="example-1", visible=True, verdict=Verdict.SKIPPED,
                       message="not run: compile_error", score=0.0, max_score=10.0),
        ],
        requirements=[
            RequirementResult(name="differentiated-checkpoint", level="spec", passed=False,
                              message="not checked: grading stopped earlier (compile_error)",
                              score=0.0, max_score=30.0),
        ],
        score=0.0, max_score=40.0, timings={}, output="  File \"submission.py\", line 3\n",
        versions=VERSIONS,
    )


CASES = {
    "accepted": accepted,
    "wrong_answer": wrong_answer_hidden,
    "compile_error": compile_error_run,
}


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"missing golden file {path}: run with JAXJUDGE_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its golden file"


@pytest.mark.parametrize("case", sorted(CASES))
def test_text_matches_golden(case: str) -> None:
    _check(f"{case}.txt", render.to_text(CASES[case]()))


@pytest.mark.parametrize("case", sorted(CASES))
def test_markdown_matches_golden(case: str) -> None:
    _check(f"{case}.md", render.to_markdown(CASES[case]()))


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradescope_matches_golden(case: str) -> None:
    data = render.to_gradescope(CASES[case]())
    _check(f"{case}.gradescope.json", json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def test_gradescope_problem_set_matches_golden() -> None:
    reports = {
        "b-problem": wrong_answer_hidden().model_copy(update={"problem": "b-problem"}),
        "a-problem": accepted().model_copy(update={"problem": "a-problem"}),
    }
    data = render.to_gradescope_set(reports)
    assert data["score"] == 150.0
    assert [t["name"] for t in data["tests"]][:1] == ["a-problem: test example-1"]
    _check("problem_set.gradescope.json", json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def test_gradescope_follows_the_results_format() -> None:
    """The fields and values Gradescope's autograder specification allows, whatever the golden."""
    for make in CASES.values():
        report = make()
        data = render.to_gradescope(report)
        assert data["score"] == pytest.approx(report.score, abs=1e-3)
        assert len(data["tests"]) == len(report.tests) + len(report.requirements)
        assert sum(t["max_score"] for t in data["tests"]) == pytest.approx(report.max_score,
                                                                          abs=1e-3)
        for t in data["tests"]:
            assert set(t) <= {"name", "score", "max_score", "status", "output", "visibility",
                              "tags", "number", "output_format", "name_format", "extra_data"}
            assert t["status"] in ("passed", "failed")
            assert t["visibility"] in ("visible", "after_published")
            assert 0 <= t["score"] <= t["max_score"]
        json.dumps(data, allow_nan=False)  # Gradescope rejects NaN/Infinity


def test_hidden_tests_never_leak_inputs_and_can_be_fully_hidden() -> None:
    report = accepted()
    report.tests[2].details = TDetails(inputs={"secret": [42.0]}, expected=7.0)
    data = render.to_gradescope(report, hidden_visibility="hidden")
    hidden = [t for t in data["tests"] if "hidden" in t["tags"][0]]
    assert len(hidden) == 3 and all(t["visibility"] == "hidden" for t in hidden)
    for text in (json.dumps(data), render.to_text(report), render.to_markdown(report)):
        assert "secret" not in text and "42.0" not in text


def test_markdown_output_cannot_escape_its_fence() -> None:
    report = compile_error_run()
    report.output = "````\n# injected heading\n````"
    md = render.to_markdown(report)
    assert "`````text\n````\n# injected heading\n````\n`````" in md


@pytest.mark.parametrize(
    ("value", "text"),
    [(70.0, "70"), (46.666666, "46.67"), (0.5, "0.5"), (0.0, "0"), (20.004, "20")],
)
def test_points_format(value: float, text: str) -> None:
    assert render.fmt_points(value) == text


# -- hostile messages ------------------------------------------------------------------------------
HOSTILE = ("look ![x](http://evil/) and [click](javascript:alert(1)) <img src=x onerror=alert(1)>"
           "\x1b[2J\x1b]0;pwned\x07 *bold* `code` | cell\n# heading\n1. list\n=== \u202eevil")
HOSTILE_SOURCE = (
    "def solve(params, x, y):\n"
    "    raise ValueError(" + repr(HOSTILE) + ")\n"
)


def _markdown_html(md: str) -> str:
    """What a CommonMark renderer with GFM tables makes of `md` (markdown-it-py comes with rich)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable("table").render(md)


def _assert_inert(report: Report) -> None:
    html = _markdown_html(render.to_markdown(report))
    for bad in ("<img", "<a ", "href=", "<h1", "<ol", "<em>", "\x1b", "\u202e"):
        assert bad not in html, (bad, html)
    assert "![x](http://evil/)" in html.replace("&quot;", '"')  # still there, as text
    for text in (render.to_text(report), json.dumps(render.to_gradescope(report))):
        assert "\x1b" not in text and "\u202e" not in text
    assert "\\x1b[2J" in render.to_text(report)  # shown, not acted on
    assert "\n  | " in render.to_text(report) or not report.output


def test_hostile_messages_render_as_text_only() -> None:
    report = compile_error_run()
    report.message = HOSTILE
    report.tests[0].message = HOSTILE
    report.requirements[0].message = HOSTILE
    report.output = HOSTILE
    _assert_inert(report)


def test_hostile_exception_from_a_real_submission(tmp_path: Path) -> None:
    """A submission controls its exception's text, which reaches the report's messages."""
    from jaxjudge import grade

    report = grade("rematerialized-mlp-block", HOSTILE_SOURCE, "run")
    assert report.verdict is Verdict.RUNTIME_ERROR, report.message
    assert "![x](http://evil/)" in report.message and "\x1b[2J" in report.message
    _assert_inert(report)
    path = tmp_path / "hostile.py"
    path.write_text(HOSTILE_SOURCE, encoding="utf-8")
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "jaxjudge.cli.main", "grade", "-p", "rematerialized-mlp-block",
         "--mode", "run", str(path)],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "FORCE_COLOR": "1", "COLUMNS": "300"},
    )
    assert done.returncode == 1, done.stderr
    assert "![x](http://evil/)" in done.stdout  # printed, as text
    assert "\x1b[2J" not in done.stdout and "\x1b]0;" not in done.stdout
    assert "\x1b]8;" not in done.stdout  # no terminal hyperlink either


def test_source_lines_follow_the_requirement_line() -> None:
    """`(at solution.py:8, 21)` after the requirement's message, in text and Markdown; lines
    without a file name (or none) add nothing."""
    from jaxjudge.grading.report import Evidence

    report = accepted()
    req = report.requirements[0]
    req.evidence = Evidence(program="x(B, D)", text="> %1 = stablehlo.tanh(%0)", focus=[0],
                            source_lines=[8, 21], source_file="solution.py")
    assert render.source_ref(req) == "solution.py:8, 21"
    assert f"{req.message} (at solution.py:8, 21)" in render.to_text(report)
    assert "(at solution\\.py:8, 21\\)" in render.to_markdown(report)  # escaped in a cell
    req.evidence = req.evidence.model_copy(update={"source_file": ""})
    assert render.source_ref(req) == "" and "(at " not in render.to_text(report)
