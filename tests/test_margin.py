"""The tolerance margin check of `check-problem` (jaxjudge/authoring/margin.py), on the package
`new-problem` makes: honest float32 orders against a float64 truth, on the tests and on the
adversarial cases a generator declares, with the grading rule atol + rtol * |expected|."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from jaxjudge.authoring.check import margin_checks
from jaxjudge.authoring.margin import MIN_MARGIN, measure_margins
from jaxjudge.authoring.scaffold import new_problem
from jaxjudge.grading.compare import allowance, compare
from jaxjudge.problems.package import load_problem


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return new_problem("unit-rows", tmp_path_factory.mktemp("problems"), "Unit rows")


def copy(template: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "unit-rows"
    shutil.copytree(template, dest)
    return dest


def set_tolerance(folder: Path, rtol: str, atol: str) -> None:
    toml = folder / "problem.toml"
    text = re.sub(r"(?m)^rtol = .*$", f"rtol = {rtol}", toml.read_text(encoding="utf-8"))
    text = re.sub(r"(?m)^atol = .*$", f"atol = {atol}", text)
    toml.write_text(text, encoding="utf-8")


def test_a_sane_tolerance_passes_and_prints_its_margins(template: Path) -> None:
    problem = load_problem(template)
    found = measure_margins(problem)
    assert not found.errors, found.errors
    assert found.samples == ["reference.py", "accepted_broadcast.py", "accepted_vmap.py"]
    assert found.tests == len(problem.cases("submit")) and found.adversarial == 0
    assert set(found.worst) == {"y"} and found.worst["y"].margin >= MIN_MARGIN
    checks = {c.name: c for c in margin_checks(problem)}
    assert checks["tolerance margin 'y'"].passed, checks
    assert re.match(r"[\d.]+x; worst: ", checks["tolerance margin 'y'"].detail)
    measured = checks["tolerance margins measured"]
    assert measured.passed and "accepted_vmap.py" in measured.detail, measured.detail


def test_a_too_tight_tolerance_fails_naming_the_margin(template: Path, tmp_path: Path) -> None:
    folder = copy(template, tmp_path)
    set_tolerance(folder, "1e-8", "0.0")  # float32 rounds by ~6e-8: no honest order fits
    failed = [c for c in margin_checks(load_problem(folder)) if not c.passed]
    assert [c.name for c in failed] == ["tolerance margin 'y'"], failed
    detail = failed[0].detail
    assert re.search(r"unit-rows: the tolerance of 'y' leaves a margin of [\d.]+x < 3x", detail)
    # which honest order, on which input and element, and the numbers behind the margin
    assert re.search(r"(reference|accepted_\w+)\.py on '(example|hidden)-\d+': y\[\d+, \d+\] is",
                     detail), detail
    assert "float64 truth" in detail and "rtol 1e-08" in detail


def test_the_margin_is_the_grading_rule(template: Path) -> None:
    """margin >= 1 exactly when compare() would accept the honest output against the truth."""
    worst = measure_margins(load_problem(template)).worst["y"]
    allowed = float(allowance(worst.truth, worst.rtol, worst.atol))
    assert worst.margin == pytest.approx(allowed / worst.error)
    rtol = worst.rtol / worst.margin * 0.999  # just too tight for this element
    atol = worst.atol / worst.margin * 0.999
    got, want = np.float32(worst.got), np.float64(worst.truth)
    assert not compare(want, np.asarray(got), rtol=rtol, atol=atol).passed
    assert compare(want, np.asarray(got), rtol=rtol / 0.998, atol=atol / 0.998).passed  # fits


ADVERSARIAL = '''

def adversarial(rs):
    # |x| ~ 3e19: x * x overflows float32, the norm is inf and y = 0 (the truth: 0.6, 0.8)
    yield Case("adversarial-overflow", {"x": [[3e19, 4e19]]}, note="sum of squares overflows")
    yield Case("adversarial-spread", {"x": rs.normal(0, 1, (2, 5)) * [1e-3, 1, 1e3, 1, 1]})
'''


def test_adversarial_cases_from_the_generator_are_measured(template: Path,
                                                           tmp_path: Path) -> None:
    folder = copy(template, tmp_path)
    gen = folder / "tests" / "generate.py"
    text = gen.read_text(encoding="utf-8")
    gen.write_text(text.replace('\n\nif __name__ == "__main__":',
                                ADVERSARIAL + '\n\nif __name__ == "__main__":'), encoding="utf-8")
    found = measure_margins(load_problem(folder))
    assert found.adversarial == 2 and not found.errors, found.errors
    worst = found.worst["y"]
    assert worst.case == "adversarial-overflow" and worst.margin < 1e-3
    assert worst.got == 0.0 and worst.truth == pytest.approx(0.8)  # the larger element


def test_a_reference_that_rounds_its_truth_to_float32_is_refused(template: Path,
                                                                 tmp_path: Path) -> None:
    folder = copy(template, tmp_path)
    ref = folder / "reference.py"
    ref.write_text(ref.read_text(encoding="utf-8").replace(
        'return {"y": x / jnp.maximum(norms, 1e-12)}',
        'return {"y": (x / jnp.maximum(norms, 1e-12)).astype(jnp.float32)}'), encoding="utf-8")
    errors = [c.detail for c in margin_checks(load_problem(folder)) if not c.passed]
    assert any("returns y as float32 under jax_enable_x64" in e for e in errors), errors
