"""The sample-submission suite: every problem's sample submissions get their expected verdicts.

Like DMOJ's testsuite: problems/<id>/submissions/expected.toml names each file's verdict (and,
for requirement failures, which requirements fail). CI runs this on the oldest and the newest
supported JAX.
"""

from __future__ import annotations

import os
import tomllib
from concurrent.futures import ThreadPoolExecutor

import pytest

from jaxjudge import Verdict, list_problems
from jaxjudge.grading.processes import ProcessGrader

# Samples whose verdict comes from the sandbox or from the numbers, not from how JAX lowers the
# program: wrong answers, time and memory limits, runtime and compile errors, and the known
# limits (accepted by design). CI grades them on the newest JAX only (`make test-oldest`
# deselects `-m "not lowering_independent"`): the oldest JAX's run is for the rules that read
# the exported program, which is where the two JAX releases differ.
LOWERING_INDEPENDENT = ("wrong_", "tle_", "mle_", "runtime_", "compile_", "limit_")

CASES = []
for _problem in list_problems():
    _expected_file = _problem.submissions_dir / "expected.toml"
    if not _expected_file.is_file():
        continue
    _table = tomllib.loads(_expected_file.read_text(encoding="utf-8")).get("files", {})
    for _name, _spec in sorted(_table.items()):
        _marks = [pytest.mark.lowering_independent] if _name.startswith(
            LOWERING_INDEPENDENT) else []
        CASES.append(pytest.param(_problem, _name, _spec, id=f"{_problem.id}/{_name}",
                                  marks=_marks))


# Samples graded at once: one worker process each (jaxjudge.grading.processes, as the service
# and grade-set grade). A grade is one busy process at a time, so on CI's 2 cores two workers
# grade the suite in about half the time.
WORKERS = max(1, min(4, os.cpu_count() or 1))
# The observer's kick seed, fixed for the suite: an installation draws its own secret one, and
# a known limit's verdict may depend on the draw (`limit_iterations_after_the_loop_by_a_counter`
# is caught by about one seed in eight: a kick direction its counter happens to show), which
# would make the suite's verdicts those of the machine it ran on.
KICK_SEED = 1


@pytest.fixture(scope="module")
def reports(request):  # type: ignore[no-untyped-def]
    """The selected samples' reports, graded ahead in the background by a ProcessGrader with a
    warm pool per worker, as the service grades: each sample in forked stages instead of two
    fresh interpreters importing jax (the cold path is covered by tests/test_grade.py and
    tests/test_load.py, with the same verdicts). No program cache: every sample runs."""
    chosen = [item.callspec.params for item in request.session.items
              if item.module is request.module and hasattr(item, "callspec")
              and "problem" in item.callspec.params]
    with ProcessGrader(WORKERS, program_cache=0, kick_seed=KICK_SEED) as grader, \
            ThreadPoolExecutor(WORKERS) as pool:
        futures = {}
        for params in chosen:
            problem, name, spec = params["problem"], params["name"], params["spec"]
            source = (problem.submissions_dir / name).read_bytes()
            futures[(problem.id, name)] = pool.submit(
                grader.grade, problem, source, spec.get("mode", "submit"), filename=name)
        yield futures
        for future in futures.values():
            future.cancel()


def test_every_problem_has_samples() -> None:
    assert CASES, "no sample submissions found"


def _only_pointless_failures(problem, report) -> bool:  # type: ignore[no-untyped-def]
    """Every test passed and only requirements that earn no points failed (a spec-level one
    with corroborated_by = []): requirement_failed with full marks, by design."""
    declared = {r.name: r for r in problem.requirements}
    failed = [r for r in report.requirements if not r.passed]
    return (all(t.verdict is Verdict.ACCEPTED for t in report.tests) and bool(failed)
            and all(not problem.earns_points(declared[r.name]) for r in failed))


@pytest.mark.parametrize(("problem", "name", "spec"), CASES)
def test_sample_submission(reports, problem, name: str, spec: dict) -> None:  # type: ignore[no-untyped-def]
    report = reports[(problem.id, name)].result()
    expected = Verdict(spec["verdict"])
    assert report.verdict is expected, (
        f"{name}: expected {expected.value}, got {report.verdict.value}: {report.message}\n"
        + "\n".join(f"  {r.name}: {r.passed} {r.message}" for r in report.requirements)
    )
    assert report.message.strip(), "every verdict needs a message a learner can act on"
    failed = sorted(r.name for r in report.requirements if not r.passed)
    if "failed" in spec:
        assert failed == sorted(spec["failed"]), f"{name}: failed requirements {failed}"
    if expected is Verdict.ACCEPTED:
        assert report.score == report.max_score > 0
        assert all(t.verdict is Verdict.ACCEPTED for t in report.tests)
    elif not _only_pointless_failures(problem, report):
        assert report.score < report.max_score
    # Hidden tests never leak inputs or outputs.
    assert all(t.details is None for t in report.tests if not t.visible)
