"""`jaxjudge grade-set` and `jaxjudge gradescope`: batch grading for courses.

`register(cli)` adds both commands to the main Typer app (jaxjudge/cli/main.py calls it). Exit
codes: 0 when every submission got a verdict (whatever the verdicts were), 1 when the grader itself
failed on some submission (internal_error rows) or a Gradescope run could not grade, 2 for bad
command-line input (unknown problem, missing folder).
"""

from __future__ import annotations

import json
import logging
import os
import tomllib
from pathlib import Path
from typing import Annotated, Any, cast

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from jaxjudge.batch.folder import (
    BatchEntry,
    BatchError,
    BatchResult,
    _missing_file,
    grade_file,
    grade_folder,
)
from jaxjudge.grading import render
from jaxjudge.grading.report import Mode, Verdict
from jaxjudge.isolation import sandbox
from jaxjudge.problems.package import Problem, ProblemError, load_problem

AUTOGRADER = Path("/autograder")
CONFIG_NAME = "jaxjudge.toml"
PROBLEM_ENV = "JAXJUDGE_PROBLEM"

_VERDICT_STYLE = {
    "accepted": "green",
    "wrong_answer": "red",
    "requirement_failed": "yellow",
    "internal_error": "bold magenta",
}


def _mode(value: str) -> Mode:
    if value not in ("run", "submit"):
        raise typer.BadParameter("mode must be 'run' or 'submit'")
    return "run" if value == "run" else "submit"


_UNSAFE_HELP = ("UNSAFE: grade even when sandbox layers are missing "
                "[JAXJUDGE_UNSAFE_ALLOW_MISSING_SANDBOX=1 or a list of layers].")


def require_sandbox(unsafe_flag: bool) -> None:
    """Fail closed before grading anyone's code: every layer, unless the unsafe opt-out (flag
    or environment) names the missing ones; raises SandboxUnavailable (or ValueError for a bad
    opt-out value). The opt-out is logged as a warning whenever it is used."""
    allowed = frozenset(sandbox.LAYERS) if unsafe_flag else sandbox.layer_list(
        os.environ.get(sandbox.UNSAFE_ENV, ""), sandbox.UNSAFE_ENV)
    prot = sandbox.require_layers(frozenset(sandbox.LAYERS), allowed)
    if allowed:
        missing = sorted(n for n, info in prot.items() if not info["active"])
        logging.getLogger("jaxjudge").warning(
            "UNSAFE: grading untrusted code with the sandbox opt-out; missing layers now: %s",
            ", ".join(missing) or "none")


def summary_table(result: BatchResult) -> Table:
    """Verdict counts, plus how many were reused from an earlier run."""
    table = Table(title="Batch summary", show_footer=True)
    n = len(result.entries)
    table.add_column("verdict", footer="total")
    table.add_column("submissions", justify="right", footer=str(n))
    for verdict, count in result.verdict_counts().items():
        style = _VERDICT_STYLE.get(verdict, "")
        table.add_row(f"[{style}]{verdict}[/]" if style else escape(verdict), str(count))
    missing = sum(1 for e in result.entries if e.path is None)
    table.caption = f"graded now: {len(result.graded)}, reused: {len(result.reused)}" + (
        f", nothing to grade: {missing}" if missing else ""
    )
    return table


def grade_set(
    submissions_dir: Annotated[
        Path, typer.Argument(help="One <student>.py or <student>/ per student.")
    ],
    problem: Annotated[
        str | None,
        typer.Option("--problem", "-p",
                     help="Problem id; omit for <student>/<problem-id>.py problem sets."),
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Results folder.")] = Path(
        "jaxjudge-results"
    ),
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Grades in parallel.")] = 2,
    mode: Annotated[str, typer.Option(help="'submit' (all tests) or 'run' (examples).")] = (
        "submit"
    ),
    force: Annotated[bool, typer.Option(help="Regrade even unchanged submissions.")] = False,
    warm: Annotated[
        bool, typer.Option("--warm/--cold", help="Warm zygote pool (default) or a fresh "
                           "interpreter per stage.")
    ] = True,
    unsafe_allow_missing_sandbox: Annotated[
        bool, typer.Option("--unsafe-allow-missing-sandbox", help=_UNSAFE_HELP)
    ] = False,
) -> None:
    """Grade a folder of submissions into scores.csv, results.json and gradescope/*.json.

    Refuses (status 2) while a sandbox layer is missing, unless the unsafe opt-out names it."""
    run_mode = _mode(mode)
    err = Console(stderr=True)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        require_sandbox(unsafe_allow_missing_sandbox)
    except (sandbox.SandboxUnavailable, ValueError) as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from exc
    # The grading code: not needed by `jaxjudge grade`'s start. Several jobs grade in as many
    # processes, each with its own GIL for the trusted side's Python (grading/processes.py).
    from jaxjudge.grading.grader import Grader
    from jaxjudge.grading.processes import ProcessGrader

    grader = (ProcessGrader(jobs, warm_pool=warm) if jobs > 1  # started by `with` below
              else Grader(warm_pool=jobs if warm else False))
    progress = Progress(
        TextColumn("[bold]grading"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.description}"),
        console=err,
        transient=False,
    )
    task = progress.add_task("", total=None)

    def started(n: int) -> None:
        progress.update(task, total=n)

    def finished(entry: BatchEntry) -> None:
        tag = " (reused)" if entry.cached else ""
        progress.update(task, advance=1,
                        description=f"{escape(entry.student)}: {entry.report.verdict}{tag}")

    try:
        with grader, progress:
            result = grade_folder(
                submissions_dir, problem, mode=run_mode, jobs=jobs, out_dir=out,
                force=force, on_start=started, on_result=finished, grader=grader,
            )
    except BatchError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from exc
    Console().print(summary_table(result))
    err.print(f"results in {out}/ (scores.csv, results.json, gradescope/)")
    if any(e.report.verdict is Verdict.INTERNAL_ERROR for e in result.entries):
        err.print("[magenta]some grades failed inside the grader: see the log above[/]")
        raise typer.Exit(1)


# -- Gradescope ----------------------------------------------------------------------------------
def _read_config(source_dir: Path) -> dict[str, Any]:
    path = source_dir / CONFIG_NAME
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BatchError(f"{path} is malformed: {exc}") from exc
    return data.get("jaxjudge", data)


def find_submission(folder: Path, problem_id: str) -> Path:
    """The file to grade in a Gradescope submission: the only .py file, else solution.py, else
    <problem-id>.py (the shallowest, since students upload zips with folders in them)."""
    if not folder.is_dir():
        raise BatchError(f"{folder} does not exist")
    files = sorted(
        (p for p in folder.rglob("*.py")
         if p.is_file() and not any(part.startswith(".") or part in {"__pycache__", "__MACOSX"}
                                    for part in p.relative_to(folder).parts)),
        key=lambda p: (len(p.relative_to(folder).parts), str(p)),
    )
    if len(files) == 1:
        return files[0]
    for name in ("solution.py", f"{problem_id}.py"):
        for p in files:
            if p.name == name:
                return p
    if not files:
        raise BatchError("no Python file was submitted: upload solution.py")
    names = ", ".join(str(p.relative_to(folder)) for p in files[:5])
    raise BatchError(f"several Python files were submitted ({names}): name yours solution.py")


def _resolve_problem(option: str | None, config: dict[str, Any], source_dir: Path) -> Problem:
    problem_id = option or os.environ.get(PROBLEM_ENV) or config.get("problem")
    if not problem_id:
        raise BatchError(
            f"no problem id: pass --problem, set {PROBLEM_ENV}, or put problem = \"...\" in "
            f"{source_dir / CONFIG_NAME}"
        )
    root = config.get("problems_dir")
    try:
        return load_problem(str(problem_id), (source_dir / root) if root else None)
    except ProblemError as exc:
        raise BatchError(str(exc)) from exc


def _write_results(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def gradescope(
    problem: Annotated[
        str | None,
        typer.Option("--problem", "-p", help=f"Problem id (else ${PROBLEM_ENV}, else "
                     f"'problem' in <source-dir>/{CONFIG_NAME})."),
    ] = None,
    submission_dir: Annotated[Path, typer.Option(help="Where Gradescope puts the upload.")] = (
        AUTOGRADER / "submission"
    ),
    source_dir: Annotated[Path, typer.Option(help=f"Holds {CONFIG_NAME}.")] = (
        AUTOGRADER / "source"
    ),
    results: Annotated[Path, typer.Option(help="The results.json to write.")] = (
        AUTOGRADER / "results" / "results.json"
    ),
    mode: Annotated[str | None, typer.Option(help="'submit' (default) or 'run'.")] = None,
    unsafe_allow_missing_sandbox: Annotated[
        bool, typer.Option("--unsafe-allow-missing-sandbox", help=_UNSAFE_HELP)
    ] = False,
) -> None:
    """Grade one Gradescope submission (use as run_autograder) and write results.json.

    Refuses (results.json says so, status 1) while a sandbox layer is missing, unless the
    unsafe opt-out names it: the hidden tests sit on the same machine as the submission."""
    # Everything printed goes to Gradescope's stdout box, which only instructors see.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        try:
            require_sandbox(unsafe_allow_missing_sandbox)
        except (sandbox.SandboxUnavailable, ValueError) as exc:
            raise BatchError(f"cannot grade safely on this machine: {exc}") from exc
        config = _read_config(source_dir)
        prob = _resolve_problem(problem, config, source_dir)
        run_mode = _mode(mode or str(config.get("mode", "submit")))
        visibility = str(config.get("hidden_visibility", "after_published"))
        if visibility not in ("hidden", "after_due_date", "after_published", "visible"):
            raise BatchError(f"hidden_visibility {visibility!r} is not a Gradescope visibility")
    except BatchError as exc:
        _write_results(results, {
            "score": 0, "output": f"The autograder is misconfigured: {exc}",
            "tests": [],
        })
        typer.echo(f"error: {exc}")
        raise typer.Exit(1) from exc

    try:
        path = find_submission(submission_dir, prob.id)
    except BatchError as exc:
        report = _missing_file(prob, run_mode, str(exc))
    else:
        typer.echo(f"grading {path} for {prob.id} ({run_mode})")
        try:
            report = grade_file(prob, path, run_mode)
        except Exception as exc:
            logging.getLogger("jaxjudge.gradescope").exception("grading %s failed", path)
            _write_results(results, {
                "score": 0, "tests": [],
                "output": f"The grader failed ({type(exc).__name__}); this is not your fault. "
                          "Please tell your course staff.",
            })
            raise typer.Exit(1) from exc
    _write_results(results, render.to_gradescope(
        report, hidden_visibility=cast(render.GradescopeVisibility, visibility)))
    typer.echo(render.to_text(report), nl=False)


def register(cli: typer.Typer) -> None:
    """Add `grade-set` and `gradescope` to the main `jaxjudge` command."""
    cli.command("grade-set")(grade_set)
    cli.command("gradescope")(gradescope)
