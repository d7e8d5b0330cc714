"""Grade a folder of submissions (one per student, or a problem set per student), resumably.

Course tooling calls `grade_folder`; the `jaxjudge grade-set` command is a thin layer over it.
Grading is subprocess-bound (every grade runs two sandboxed processes), so a thread pool gives
real parallelism. Each finished grade is written to `<out>/reports/<problem>/<student>.json`
with the hash of the source and the problem's fingerprint, so a re-run skips what is already
graded and regrades exactly the submissions (or problems) that changed.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jaxjudge.grading import render
from jaxjudge.grading.report import Mode, Report, Verdict
from jaxjudge.problems.package import Limits, Problem, ProblemError, list_problems, load_problem

if TYPE_CHECKING:
    from jaxjudge.grading.grader import Grader
    from jaxjudge.grading.processes import ProcessGrader

log = logging.getLogger("jaxjudge.batch")

SCORES_HEADER = ("student", "problem", "verdict", "score", "max_score", "seconds")
SOLUTION_NAME = "solution.py"
_CACHE_VERSION = 1
_IGNORED_DIRS = {"__pycache__", "__MACOSX"}


class BatchError(Exception):
    """The batch itself cannot run (bad folder, unknown problem): the operator's input, not a
    student's submission."""


@dataclass(frozen=True)
class Submission:
    """One file to grade. `path` is None when the student's folder held no usable file; then
    `problem_note` says why, and the student gets a zero with that message instead of a grade."""

    student: str
    problem: str
    path: Path | None
    problem_note: str = ""


@dataclass
class BatchEntry:
    """The outcome for one (student, problem): the report, how long it took, whether reused."""

    student: str
    problem: str
    path: Path | None
    report: Report
    seconds: float
    cached: bool = False
    source_sha256: str = ""


@dataclass
class BatchResult:
    """Everything `grade_folder` produced; `problem_set` decides the shape of results.json."""

    entries: list[BatchEntry]
    problem_set: bool
    out_dir: Path | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def graded(self) -> list[BatchEntry]:
        """Entries graded in this run (not reused, and not a folder with nothing to grade)."""
        return [e for e in self.entries if not e.cached and e.path is not None]

    @property
    def reused(self) -> list[BatchEntry]:
        """Entries whose stored result from an earlier run was still valid."""
        return [e for e in self.entries if e.cached]

    def verdict_counts(self) -> dict[str, int]:
        counts = Counter(str(e.report.verdict) for e in self.entries)
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def by_student(self) -> dict[str, dict[str, BatchEntry]]:
        out: dict[str, dict[str, BatchEntry]] = {}
        for e in sorted(self.entries, key=lambda e: (e.student, e.problem)):
            out.setdefault(e.student, {})[e.problem] = e
        return out


# -- finding submissions -------------------------------------------------------------------------
def _visible(path: Path) -> bool:
    return not path.name.startswith(".") and path.name not in _IGNORED_DIRS


def _pick_file(folder: Path, problem_id: str) -> tuple[Path | None, str]:
    """The one file in a student's folder to grade for `problem_id`, or None and the reason."""
    candidates = sorted(p for p in folder.iterdir() if p.suffix == ".py" and p.is_file()
                        and _visible(p))
    for name in (SOLUTION_NAME, f"{problem_id}.py"):
        for p in candidates:
            if p.name == name:
                return p, ""
    if len(candidates) == 1:
        return candidates[0], ""
    if not candidates:
        return None, f"no Python file in {folder.name}/ (expected {SOLUTION_NAME})"
    names = ", ".join(p.name for p in candidates)
    return None, f"several Python files in {folder.name}/ ({names}) and none is {SOLUTION_NAME}"


def discover(
    root: Path,
    problem: str | None = None,
    known_problems: Iterable[str] | None = None,
    *,
    exclude: Path | None = None,
) -> tuple[list[Submission], bool]:
    """The submissions under `root` and whether this is a problem-set layout.

    With `problem`: `root/<student>.py` or `root/<student>/` (holding `solution.py`,
    `<problem>.py` or a single `.py` file). Without: `root/<student>/<problem-id>.py` for every
    known problem id (a problem set); other files are ignored with a warning. `exclude` (the
    results folder, when it sits among the submissions) is never taken for a student.
    """
    root = Path(root)
    if not root.is_dir():
        raise BatchError(f"{root} is not a folder")
    skip = exclude.resolve() if exclude is not None else None
    entries = sorted(p for p in root.iterdir() if _visible(p) and p.resolve() != skip)
    subs: list[Submission] = []
    if problem is not None:
        for p in entries:
            if p.is_file() and p.suffix == ".py":
                subs.append(Submission(p.stem, problem, p))
            elif p.is_dir():
                path, note = _pick_file(p, problem)
                subs.append(Submission(p.name, problem, path, note))
        _check_unique(subs)
        return subs, False

    known = set(known_problems if known_problems is not None else
                (p.id for p in list_problems()))
    loose = [p.name for p in entries if p.is_file() and p.suffix == ".py"]
    if loose:
        raise BatchError(
            f"{root} holds loose files ({', '.join(loose[:3])}...): pass --problem, or use the "
            "problem-set layout <student>/<problem-id>.py"
        )
    for folder in (p for p in entries if p.is_dir()):
        for f in sorted(folder.iterdir()):
            if not (f.is_file() and f.suffix == ".py" and _visible(f)):
                continue
            if f.stem in known:
                subs.append(Submission(folder.name, f.stem, f))
            else:
                log.warning("ignoring %s: %r is not a known problem id", f, f.stem)
    _check_unique(subs)
    if not subs:
        raise BatchError(
            f"no <student>/<problem-id>.py files under {root}; known problems: "
            f"{', '.join(sorted(known)) or 'none'} (or pass --problem)"
        )
    return subs, True


def _check_unique(subs: list[Submission]) -> None:
    """`alice.py` beside `alice/` would silently overwrite one grade with the other."""
    seen = Counter((s.student, s.problem) for s in subs)
    dupes = sorted({student for (student, _), n in seen.items() if n > 1})
    if dupes:
        raise BatchError(f"both <student>.py and <student>/ exist for: {', '.join(dupes)}")


# -- grading one file ----------------------------------------------------------------------------
def grade_file(
    problem: Problem | str,
    path: str | os.PathLike[str],
    mode: Mode = "submit",
    *,
    limits: Limits | None = None,
    grader: Grader | ProcessGrader | None = None,
) -> Report:
    """Grade one file (with `grader`, else the default one). The bytes go to the grader
    undecoded, so a non-UTF-8 file is the grader's verdict to give, not a UnicodeDecodeError
    here."""
    from jaxjudge.grading.grade import default_grader

    p = Path(path)
    g = grader or default_grader()
    return g.grade(problem, p.read_bytes(), mode, filename=p.name, limits=limits)


def _missing_file(problem: Problem, mode: Mode, note: str) -> Report:
    from jaxjudge.grading.scoring import max_score

    return Report(
        verdict=Verdict.COMPILE_ERROR,
        problem=problem.id,
        mode=mode,
        message=f"Nothing to grade: {note}.",
        max_score=max_score(problem, mode),
    )


# -- the resume cache ----------------------------------------------------------------------------
def _cache_key(problem: Problem, mode: Mode, source_sha256: str, limits: Limits | None) -> str:
    """What a stored result must match to be reused: same bytes, problem, mode, limits and
    grader version (a fixed grader bug must reach everyone's grade)."""
    from jaxjudge.version import grader_version

    parts = {
        "v": _CACHE_VERSION,
        "grader": grader_version(),
        "problem": problem.id,
        "fingerprint": problem.fingerprint(),
        "mode": mode,
        "source": source_sha256,
        "limits": limits.model_dump() if limits is not None else None,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _cache_path(out_dir: Path, problem: str, student: str) -> Path:
    return out_dir / "reports" / problem / f"{student}.json"


def _load_cached(path: Path, key: str) -> tuple[Report, float] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("key") != key:
            return None
        report = Report.model_validate(data["report"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # missing, torn or from another version: grade again
    if report.verdict is Verdict.INTERNAL_ERROR:
        return None  # our fault last time; it may be fixed now
    return report, float(data.get("seconds", 0.0))


def _atomic_write(path: Path, text: str) -> None:
    """Write-then-rename, so an interrupted batch never leaves a half-written result behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# -- the batch -----------------------------------------------------------------------------------
def grade_folder(
    root: str | os.PathLike[str],
    problem: Problem | str | None = None,
    *,
    mode: Mode = "submit",
    jobs: int = 2,
    out_dir: str | os.PathLike[str] | None = None,
    force: bool = False,
    limits: Limits | None = None,
    problems_root: str | os.PathLike[str] | None = None,
    on_start: Callable[[int], None] | None = None,
    on_result: Callable[[BatchEntry], None] | None = None,
    grader: Grader | ProcessGrader | None = None,
) -> BatchResult:
    """Grade every submission under `root` (layouts: see `discover`).

    With `out_dir`, finished grades are stored there as they complete and reused on the next
    run unless `force`; the aggregate files (scores.csv, results.json, gradescope/) are written
    at the end. An exception while grading one student becomes that student's internal_error
    row (and a log record); the others are still graded. `on_start(n)` gets the number of
    submissions, `on_result` each entry as it finishes (called from this thread).
    `problems_root` is where problem packages are looked up (default: every problem root,
    jaxjudge.problems.roots).
    """
    if jobs < 1:
        raise BatchError("jobs must be at least 1")
    if mode not in ("run", "submit"):
        raise BatchError(f"mode must be 'run' or 'submit', not {mode!r}")
    proot = Path(problems_root) if problems_root is not None else None
    out = Path(out_dir) if out_dir is not None else None
    problems: dict[str, Problem] = {}
    if problem is not None:
        p = problem if isinstance(problem, Problem) else _load(problem, proot)
        problems[p.id] = p
        subs, problem_set = discover(Path(root), p.id, exclude=out)
    else:
        try:
            known = [p.id for p in list_problems(proot)]
        except ProblemError as exc:
            raise BatchError(str(exc)) from exc
        subs, problem_set = discover(Path(root), None, known, exclude=out)
        for pid in sorted({s.problem for s in subs}):
            problems[pid] = _load(pid, proot)
    if on_start is not None:
        on_start(len(subs))

    entries: list[BatchEntry] = []
    todo: list[tuple[Submission, str, str]] = []
    for sub in subs:
        prob = problems[sub.problem]
        if sub.path is None:
            entry = BatchEntry(sub.student, sub.problem, None,
                               _missing_file(prob, mode, sub.problem_note), 0.0)
            entries.append(entry)
            if on_result is not None:
                on_result(entry)
            continue
        try:
            digest = hashlib.sha256(sub.path.read_bytes()).hexdigest()
        except OSError as exc:
            entry = BatchEntry(sub.student, sub.problem, None,
                               _missing_file(prob, mode, f"cannot read {sub.path.name}: {exc}"),
                               0.0)
            entries.append(entry)
            if on_result is not None:
                on_result(entry)
            continue
        key = _cache_key(prob, mode, digest, limits)
        cached = None
        if out is not None and not force:
            cached = _load_cached(_cache_path(out, sub.problem, sub.student), key)
        if cached is not None:
            report, seconds = cached
            entry = BatchEntry(sub.student, sub.problem, sub.path, report, seconds,
                               cached=True, source_sha256=digest)
            entries.append(entry)
            if on_result is not None:
                on_result(entry)
        else:
            todo.append((sub, digest, key))

    def run(sub: Submission, digest: str) -> BatchEntry:
        prob = problems[sub.problem]
        assert sub.path is not None
        start = time.monotonic()
        try:
            report = grade_file(prob, sub.path, mode, limits=limits, grader=grader)
        except Exception as exc:  # a bug of ours must not stop the other students' grades
            log.exception("grading %s (%s) failed", sub.path, sub.problem)
            from jaxjudge.grading.grader import internal_error

            report = internal_error(
                prob, mode, f"The grader failed on this submission ({type(exc).__name__}: "
                f"{exc}). This is not your fault; it has been logged."
            )
        return BatchEntry(sub.student, sub.problem, sub.path, report,
                          time.monotonic() - start, source_sha256=digest)

    if todo:
        with ThreadPoolExecutor(max_workers=min(jobs, len(todo)),
                                thread_name_prefix="jaxjudge-batch") as pool:
            futures = {pool.submit(run, sub, digest): key for sub, digest, key in todo}
            for fut in as_completed(futures):
                entry = fut.result()
                if out is not None:
                    _store(out, entry, futures[fut])
                entries.append(entry)
                if on_result is not None:
                    on_result(entry)

    entries.sort(key=lambda e: (e.student, e.problem))
    result = BatchResult(entries, problem_set, out, sorted(problems))
    if out is not None:
        write_outputs(result, out)
    return result


def _load(problem_id: str, root: Path | None) -> Problem:
    try:
        return load_problem(problem_id, root)
    except ProblemError as exc:
        raise BatchError(str(exc)) from exc


def _store(out: Path, entry: BatchEntry, key: str) -> None:
    data = {
        "key": key,
        "student": entry.student,
        "problem": entry.problem,
        "source": str(entry.path) if entry.path else None,
        "source_sha256": entry.source_sha256,
        "seconds": round(entry.seconds, 3),
        "report": entry.report.model_dump(mode="json"),
    }
    try:
        _atomic_write(_cache_path(out, entry.problem, entry.student), json.dumps(data, indent=2))
    except OSError:
        log.exception("could not store the result of %s/%s", entry.student, entry.problem)


# -- aggregate outputs ---------------------------------------------------------------------------
def scores_csv(result: BatchResult) -> str:
    """scores.csv: one row per (student, problem), header `SCORES_HEADER`."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(SCORES_HEADER)
    for e in sorted(result.entries, key=lambda e: (e.student, e.problem)):
        writer.writerow([
            e.student, e.problem, str(e.report.verdict), render.fmt_points(e.report.score),
            render.fmt_points(e.report.max_score), f"{e.seconds:.2f}",
        ])
    return buf.getvalue()


def results_json(result: BatchResult) -> dict[str, Any]:
    """student -> report, or student -> problem -> report for a problem set."""
    by_student = result.by_student()
    if result.problem_set:
        return {
            s: {p: e.report.model_dump(mode="json") for p, e in probs.items()}
            for s, probs in by_student.items()
        }
    return {s: next(iter(probs.values())).report.model_dump(mode="json")
            for s, probs in by_student.items()}


def gradescope_results(result: BatchResult) -> dict[str, dict[str, Any]]:
    """student -> Gradescope results.json (a problem set is merged into one per student)."""
    out: dict[str, dict[str, Any]] = {}
    for student, probs in result.by_student().items():
        reports: Mapping[str, Report] = {p: e.report for p, e in probs.items()}
        out[student] = render.to_gradescope_set(reports)
    return out


def write_outputs(result: BatchResult, out_dir: str | os.PathLike[str]) -> None:
    """Write scores.csv, results.json and gradescope/<student>.json into `out_dir`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _atomic_write(out / "scores.csv", scores_csv(result))
    _atomic_write(out / "results.json", json.dumps(results_json(result), indent=2) + "\n")
    for student, data in gradescope_results(result).items():
        _atomic_write(out / "gradescope" / f"{student}.json", json.dumps(data, indent=2) + "\n")
