"""`check_problem(folder)`: everything a problem package must satisfy before learners see it.

One pass, each check a named result (what CI runs for every problem, and what an author runs
before opening a pull request):

1. `problem.toml` loads: metadata, signature, rules and their options (jaxjudge.problems.package);
2. the statement, starter and reference exist; the statement names the entry point and every
   requirement's description appears in it;
3. `tests/generate.py --check` reproduces `tests/cases.json`; there are at least 30 hidden tests
   and the published examples are the visible ones;
4. `tests/examples.json` (`{"examples": [{name, inputs, output}]}`), if present, is reproduced
   by the reference to its printed decimals;
5. the reference is graded `accepted` with full marks through the real sandboxed pipeline;
6. the tolerances leave every honest float32 order (the reference and the `accepted_*`
   samples) at least MIN_MARGIN times its worst error against a float64 truth, on the tests and
   the adversarial cases tests/generate.py declares (jaxjudge.authoring.margin);
7. every sample in `submissions/expected.toml` gets its verdict (and exactly its failed
   requirements), and every requirement's failure mode has a sample.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from jaxjudge.authoring.margin import MIN_MARGIN, format_margin, measure_margins
from jaxjudge.grading.grade import grade
from jaxjudge.grading.report import Verdict
from jaxjudge.problems.package import Problem, ProblemError, load_problem

MIN_HIDDEN = 30


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool
    detail: str


def check_problem(
    folder: Path, *, samples: bool = True, margins: bool = True,
    progress: Callable[[str], None] | None = None,
) -> list[Check]:
    """Run every check on one package; never raises for a broken package (it is a result)."""
    results: list[Check] = []
    say = progress or (lambda _msg: None)
    try:
        problem = load_problem(Path(folder))
    except ProblemError as exc:
        return [Check("problem.toml loads", False, str(exc))]
    results.append(Check("problem.toml loads", True,
                         f"{problem.id}: {len(problem.requirements)} requirement(s)"))
    for step in (_files, _cases, _examples):
        say(step.__name__.strip("_"))
        results.extend(step(problem))
    say("reference")
    results.append(_reference(problem))
    if margins:
        say("tolerance margins")
        results.extend(margin_checks(problem))
    if samples:
        results.extend(_samples(problem, say))
    return results


def _files(problem: Problem) -> Iterator[Check]:
    root = problem.root
    missing = [f for f in ("statement.md", "starter.py", "reference.py", "tests/generate.py",
                           "tests/cases.json") if not (root / f).is_file()]
    yield Check("package files", not missing, f"missing: {missing}" if missing else "all present")
    if (root / "statement.md").is_file():
        text = problem.statement.lower()
        gaps = [] if problem.entry_point.lower() in text else [
            f"the entry point {problem.entry_point!r} is not named"]
        gaps += [f"argument {a.name!r} is not named" for a in problem.arguments
                 if a.name.lower() not in text]
        if problem.requirements and "## requirements" not in text:
            gaps.append("no '## Requirements' section")
        yield Check("statement", not gaps, "; ".join(gaps) or
                    "names the entry point, every argument and has a Requirements section")


def _cases(problem: Problem) -> Iterator[Check]:
    gen = problem.root / "tests" / "generate.py"
    if not gen.is_file():
        return
    proc = subprocess.run([sys.executable, str(gen), "--check"], capture_output=True, text=True,
                          timeout=600, cwd=problem.root)
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
    yield Check("tests/generate.py --check", proc.returncode == 0, " / ".join(tail))
    try:
        cases = problem.cases("submit")
    except ProblemError as exc:
        yield Check("cases.json", False, str(exc))
        return
    hidden = [c for c in cases if not c.visible]
    visible = [c for c in cases if c.visible]
    yield Check(f"at least {MIN_HIDDEN} hidden tests", len(hidden) >= MIN_HIDDEN,
                f"{len(hidden)} hidden, {len(visible)} published")


def _examples(problem: Problem) -> Iterator[Check]:
    path = problem.root / "tests" / "examples.json"
    if not path.is_file():
        return
    import jax

    from jaxjudge.authoring.testgen import _load_module

    try:
        examples = json.loads(path.read_text(encoding="utf-8"))["examples"]
        ref = _load_module(problem.reference_path, f"{problem.id}_reference_examples")
        solve = jax.jit(getattr(ref, problem.entry_point))
        names = [a.name for a in problem.arguments]
        bad = []
        for ex in examples:
            args = [_array_tree(ex["inputs"][n], problem, n) for n in names]
            got = jax.device_get(solve(*args))
            if not _matches_printed(got, ex["output"]):
                bad.append(ex.get("name", "?"))
    except (KeyError, TypeError, ValueError, OSError) as exc:
        yield Check("examples.json reproduced", False, f"unreadable: {exc!r}")
        return
    yield Check("examples.json reproduced", not bad,
                f"{len(examples)} examples" if not bad else f"differ: {bad}")


def _array_tree(value: Any, problem: Problem, arg: str, key: str | None = None) -> Any:
    if isinstance(value, dict):
        return {k: _array_tree(v, problem, arg, k) for k, v in value.items()}
    return np.asarray(value, dtype=np.dtype(problem.input_dtype(arg, key)))


def _matches_printed(got: Any, printed: Any) -> bool:
    """The reference's value equals the printed one to the printed precision (6 decimals)."""
    if isinstance(printed, dict):
        return isinstance(got, dict) and set(got) == set(printed) and all(
            _matches_printed(got[k], printed[k]) for k in printed)
    a, b = np.asarray(got, np.float64), np.asarray(printed, np.float64)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= 5e-6 + 1e-6 * np.abs(b)))


def _reference(problem: Problem) -> Check:
    report = grade(problem, problem.reference_path.read_bytes(), "submit",
                   filename="reference.py")
    ok = report.verdict is Verdict.ACCEPTED and report.score == report.max_score
    failed = [f"{r.name}: {r.message}" for r in report.requirements if not r.passed]
    detail = (f"accepted, {report.score:g}/{report.max_score:g} in "
              f"{report.timings.get('total', 0):.1f} s") if ok else (
        f"{report.verdict.value}: {report.message} {failed}")
    return Check("reference is accepted with full marks", ok, detail)


def margin_checks(problem: Problem) -> Iterator[Check]:
    """One check per output: its worst margin over every honest order and input (what went
    wrong measuring it is a failed check too)."""
    found = measure_margins(problem)
    for error in found.errors:
        yield Check("tolerance margins", False, f"{problem.id}: {error}")
    if not found.worst and not found.errors:
        yield Check("tolerance margins", False, f"{problem.id}: no output was measured")
    for path, worst in sorted(found.worst.items()):
        ok = worst.margin >= MIN_MARGIN
        head = (format_margin(worst.margin) if ok else
                f"{problem.id}: the tolerance of {path!r} leaves a margin of "
                f"{worst.margin:.3g}x < {MIN_MARGIN:g}x (loosen it in problem.toml, or fix the "
                "case or the sample)")
        yield Check(f"tolerance margin {path!r}", ok, f"{head}; worst: {worst.describe()}")
    if found.worst:
        orders = ", ".join(f"{name} {format_margin(m)}"
                           for name, m in sorted(found.by_sample.items()))
        yield Check("tolerance margins measured", not found.errors,
                    f"{found.summary()}; smallest margin per order: {orders}")


def _samples(problem: Problem, say: Callable[[str], None]) -> Iterator[Check]:
    path = problem.submissions_dir / "expected.toml"
    if not path.is_file():
        yield Check("sample submissions", False, f"{path} is missing")
        return
    table = tomllib.loads(path.read_text(encoding="utf-8")).get("files", {})
    verdicts: set[str] = set()
    failing: set[str] = set()
    for name, spec in sorted(table.items()):
        say(f"sample {name}")
        file = problem.submissions_dir / name
        if not file.is_file():
            yield Check(f"sample {name}", False, "file missing")
            continue
        report = grade(problem, file.read_bytes(), spec.get("mode", "submit"), filename=name)
        want = spec.get("verdict")
        failed = sorted(r.name for r in report.requirements if not r.passed)
        ok = report.verdict.value == want and (
            "failed" not in spec or failed == sorted(spec["failed"]))
        verdicts.add(report.verdict.value)
        if report.verdict is Verdict.REQUIREMENT_FAILED:
            failing.update(failed)
        detail = f"{report.verdict.value}" + (f", failed {failed}" if failed else "")
        if not ok:
            detail += f" (expected {want}" + (f", failed {spec['failed']}" if "failed" in spec
                                               else "") + f"): {report.message[:300]}"
        yield Check(f"sample {name}", ok, detail)
    accepted = sum(1 for s in table.values() if s.get("verdict") == "accepted")
    yield Check("at least two accepted styles", accepted >= 2, f"{accepted} accepted samples")
    uncovered = sorted({r.name for r in problem.requirements} - failing)
    yield Check("every requirement has a failing sample", not uncovered,
                f"no sample fails {uncovered}" if uncovered else "all covered")
    yield Check("a plausible wrong answer", "wrong_answer" in verdicts,
                "present" if "wrong_answer" in verdicts else "no wrong_answer sample")
