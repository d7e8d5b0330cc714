"""The `jaxjudge` command line: grade a file, list and show problems, check the sandbox.

Exit status: 0 accepted, 1 any other verdict, 2 usage or internal errors; `doctor`: 0
when every sandbox layer is active, else 1.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from jaxjudge.cli.output import err, out, print_problems, print_report
from jaxjudge.grading.render import math_as_code
from jaxjudge.grading.report import Verdict
from jaxjudge.isolation import sandbox
from jaxjudge.isolation.sandbox import protections
from jaxjudge.problems.package import ProblemError, list_problems, load_problem

# A custom input file (--input): 3 inputs of 4,096 numbers are far below this.
MAX_INPUT_BYTES = 1 << 20

cli = typer.Typer(
    name="jaxjudge",
    help="An online judge for JAX programming problems.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
def _fail(message: str) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}")
    return typer.Exit(2)


@cli.command("grade")
def grade_cmd(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="The solution file (Python).")],
    problem: Annotated[str, typer.Option("--problem", "-p", help="Problem id.")],
    mode: Annotated[str, typer.Option(help="run: published examples only; submit: all tests.")]
    = "submit",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    inputs: Annotated[Path | None, typer.Option(
        "--input", help="With --mode run: a JSON file with your own input (an object of the "
        "arguments) or a list of up to 3; the reference computes their expected outputs.")]
    = None,
) -> None:
    """Grade FILE against a problem and print the verdict."""
    if mode not in ("run", "submit"):
        raise _fail(f"--mode must be 'run' or 'submit', not {mode!r}")
    custom = None
    if inputs is not None:
        if mode != "run":
            raise _fail("--input needs --mode run")
        try:
            with inputs.open("rb") as given:  # bounded: --input /dev/zero must not fill memory
                raw = given.read(MAX_INPUT_BYTES + 1)
            if len(raw) > MAX_INPUT_BYTES:
                raise _fail(f"{inputs} is larger than {MAX_INPUT_BYTES >> 20} MiB: custom "
                            "inputs hold a few thousand numbers")
            loaded = json.loads(raw.decode("utf-8"))
        except (OSError, ValueError) as exc:
            raise _fail(f"cannot read {inputs} as JSON: {exc}") from exc
        except RecursionError:  # json's decoder recurses once per nested list
            raise _fail(f"cannot read {inputs} as JSON: nested too deeply") from None
        custom = loaded if isinstance(loaded, list) else [loaded]
    # A one-off grade is mostly two sandboxed `import jax`es: find the sandbox layers (as the
    # last all-good probe found them) while the problem loads, start both stages
    # (jaxjudge.grading.early), and only then import the grading code, while they import jax.
    sandbox.detect_in_background(cached=True)
    try:
        prob = load_problem(problem)
    except ProblemError as exc:
        raise _fail(str(exc)) from exc
    try:
        source = file.read_bytes()
    except OSError as exc:
        raise _fail(f"cannot read {file}: {exc.strerror}") from exc
    from jaxjudge.grading import early

    # Stages jaxjudge.cli.launch started from the same arguments, before this module was imported;
    # the grade adopts them only if they run under this problem's limits.
    started = (ctx.obj if isinstance(ctx.obj, early.Started)
               else early.try_start(prob.limits, prob.observed))
    try:
        from jaxjudge.grading.custom import CustomInputError
        from jaxjudge.grading.grade import grade

        try:
            report = grade(prob, source, mode, filename=file.name,  # type: ignore[arg-type]
                           early=started, custom_inputs=custom)
        except CustomInputError as exc:
            raise _fail(escape(str(exc))) from exc
    finally:
        if started is not None:
            started.close()
    forgot = report.verdict is Verdict.INTERNAL_ERROR and sandbox.detected_from_cache()
    if forgot:
        # A layer that worked when it was probed may not now: probe afresh next time (even if
        # the report cannot be written below).
        from jaxjudge.isolation import layer_cache

        layer_cache.forget()
    try:
        if as_json:
            sys.stdout.write(report.model_dump_json() + "\n")
        else:
            print_report(report)
        sys.stdout.flush()
    except (OSError, ValueError, AttributeError) as exc:  # a full disk, a closed pipe or fd
        # Not a verdict: whoever reads the status must not take a lost report as graded.
        why = "standard output is closed" if sys.stdout is None else (
            getattr(exc, "strerror", None) or str(exc))
        raise _fail(f"cannot write the report: {why}") from None
    if report.verdict is Verdict.INTERNAL_ERROR:
        if forgot:
            err.print("[dim]The sandbox layers were taken from an earlier probe; the next "
                       "grade probes them again.[/]")
        raise typer.Exit(2)
    raise typer.Exit(0 if report.accepted else 1)


@cli.command("problems")
def problems_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    server: Annotated[str | None, typer.Option(help="List a jaxjudge server's problems.")]
    = None,
) -> None:
    """List the available problems."""
    if server is not None:
        from jaxjudge.cli import remote

        remote.remote_problems(server, as_json)
        return
    try:
        probs = list_problems()
    except ProblemError as exc:
        raise _fail(str(exc)) from exc
    if as_json:
        rows = [
            {"id": p.id, "title": p.title, "difficulty": p.difficulty, "tags": p.tags}
            for p in probs
        ]
        sys.stdout.write(json.dumps(rows) + "\n")
        return
    print_problems(out, [(p.id, p.title, p.difficulty, ", ".join(p.tags)) for p in probs])


@cli.command("show")
def show_cmd(
    problem_id: Annotated[str, typer.Argument(help="Problem id.")],
    starter: Annotated[bool, typer.Option(help="Print the starter file instead.")] = False,
    server: Annotated[str | None, typer.Option(help="Read it from a jaxjudge server.")]
    = None,
) -> None:
    """Show a problem's statement (or its starter code)."""
    if server is not None:
        from jaxjudge.cli import remote

        remote.remote_show(server, problem_id, starter)
        return
    try:
        prob = load_problem(problem_id)
    except ProblemError as exc:
        raise _fail(str(exc)) from exc
    if starter:
        sys.stdout.write(prob.starter)
        return
    from rich.markdown import Markdown

    out.print(Markdown(math_as_code(prob.statement)))


@cli.command("doctor", help=(
    "Report which sandbox protections are active on this machine, and whether (and how) the "
    "warm pool can run here.\n\n"
    "Exit status: 0 when every sandbox layer is active, 1 when any is missing (whatever "
    "JAXJUDGE_UNSAFE_ALLOW_MISSING_SANDBOX allows), so that scripts and health checks can read "
    "it. The warm pool does not change it: without it grades are slower, not less safe."))
def doctor_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Report the sandbox layers and the warm pool; exit 1 when a layer is missing."""
    from jaxjudge.isolation.resident import pool_support

    layers = protections()
    warm = pool_support(layers)
    missing = [name for name, info in layers.items() if not info.get("active")]
    if as_json:
        sys.stdout.write(json.dumps({**layers, "warm_pool": warm}) + "\n")
    else:
        table = Table(title="Sandbox layers")
        for col in ("layer", "active", "detail"):
            table.add_column(col)
        for name, info in layers.items():
            table.add_row(name, "[green]yes[/]" if info.get("active") else "[red]no[/]",
                          escape(str(info.get("detail", ""))))
        out.print(table)
        out.print(f"[bold]warm pool:[/] {escape(warm['detail'])}")
        if missing:
            err.print(f"[bold red]missing sandbox layers:[/] {', '.join(missing)} (exit 1)")
    if missing:
        raise typer.Exit(1)


# Commands that live in their own modules (batch grading and Gradescope, problem authoring, the
# remote client), imported only when one of theirs runs or help lists them all: a one-off
# `grade` starts its sandboxed stages ~0.15 s sooner without them.
_LAZY_COMMANDS: dict[str, str] = {
    "grade-set": "jaxjudge.cli.batch",
    "gradescope": "jaxjudge.cli.batch",
    "check-problem": "jaxjudge.cli.authoring",
    "new-problem": "jaxjudge.cli.authoring",
    "rules": "jaxjudge.cli.authoring",
    "submit": "jaxjudge.cli.remote",
}
_registered: set[str] = set()


def register_commands(argv: list[str]) -> None:
    """Register the modules `argv` (the arguments after the program name) needs: none for a
    command defined here or in jaxjudge/cli/service.py, the one that defines a lazy command, and all
    of them for anything else (help, a typo), so that help lists and suggests every command."""
    import importlib

    name = argv[0] if argv and not argv[0].startswith("-") else None
    if name is not None and name not in _LAZY_COMMANDS and any(
            c.name == name for c in cli.registered_commands):
        return
    wanted = [_LAZY_COMMANDS[name]] if name in _LAZY_COMMANDS else sorted(
        set(_LAZY_COMMANDS.values()))
    for module in wanted:
        if module not in _registered:
            _registered.add(module)
            importlib.import_module(module).register(cli)


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    register_commands(sys.argv[1:])
    cli()


if __name__ == "__main__":
    main()
