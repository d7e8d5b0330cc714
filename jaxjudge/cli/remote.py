"""`jaxjudge submit`, and `problems`/`show` with `--server`: the CLI side of
jaxjudge/client/remote.py.

`register(cli)` adds `submit` to the main Typer app; jaxjudge/cli/main.py calls `remote_problems`
and
`remote_show` when `--server` is given. The output and exit statuses are `jaxjudge grade`'s:
0 accepted, 1 any other verdict, 2 usage, connection or server errors (and internal_error).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markdown import Markdown
from rich.markup import escape

from jaxjudge.cli.output import print_problems, print_report
from jaxjudge.client.remote import (
    DEFAULT_TIMEOUT,
    ClientError,
    JudgeClient,
    SubmissionInfo,
    clean_report,
    clean_text,
    open_http,
    resolve_config,
)
from jaxjudge.grading.render import math_as_code
from jaxjudge.grading.report import Mode, Verdict

READ_TIMEOUT = 60.0  # problems and show: one or two small requests


def _fail(err: Console, message: str) -> typer.Exit:
    err.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True, highlight=False)
    return typer.Exit(2)


def _warner(err: Console) -> Callable[[str], None]:
    def warn(message: str) -> None:
        err.print(f"[yellow]warning:[/] {escape(message)}", soft_wrap=True, highlight=False)

    return warn


@contextlib.contextmanager
def _client(server: str | None, err: Console) -> Iterator[JudgeClient]:
    """A JudgeClient for the resolved server and token; closes its connections on exit."""
    warn = _warner(err)
    config = resolve_config(server, os.environ, warn)
    with open_http(config) as http:
        yield JudgeClient(
            http,
            token_source=config.token_source,
            config_file=config.config_path,
            notify=lambda message: err.print(
                f"[dim]{escape(message)}[/]", soft_wrap=True, highlight=False
            ),
        )


@contextlib.contextmanager
def _spinner(err: Console, server: str) -> Iterator[Callable[[str], None] | None]:
    """A status line on stderr while the grade is queued or running, only on a terminal (so
    pipes, CI logs and `--json` consumers never see it)."""
    if not err.is_terminal:
        yield None
        return
    start = time.monotonic()
    with err.status("submitting", spinner="dots") as status:

        def update(state: str) -> None:
            status.update(f"{state} on {server} ({time.monotonic() - start:.0f} s)")

        yield update


def submit(
    file: Annotated[Path, typer.Argument(help="The solution file (Python).")],
    problem: Annotated[str, typer.Option("--problem", "-p", help="Problem id.")],
    server: Annotated[
        str | None,
        typer.Option(help="Server URL [JAXJUDGE_SERVER, else `server` in the config file]."),
    ] = None,
    mode: Annotated[str, typer.Option(help="run: published examples only; submit: all tests.")]
    = "submit",
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")]
    = False,
    timeout: Annotated[
        float, typer.Option(help="Seconds to wait for a verdict before giving up.")
    ] = DEFAULT_TIMEOUT,
) -> None:
    """Grade FILE on a remote jaxjudge server and print the verdict, as `grade` does.

    The token comes from JAXJUDGE_TOKEN, else `token` in ~/.config/jaxjudge/client.toml.
    """

    err = Console(stderr=True)
    if mode not in ("run", "submit"):
        raise _fail(err, f"--mode must be 'run' or 'submit', not {mode!r}")
    checked: Mode = "run" if mode == "run" else "submit"
    if not timeout > 0:
        raise _fail(err, "--timeout must be a positive number of seconds")
    try:
        source = file.read_bytes()
    except OSError as exc:
        raise _fail(err, f"cannot read {file}: {exc.strerror}") from exc
    submitted: list[SubmissionInfo] = []
    try:
        with _client(server, err) as client, _spinner(err, client.server) as on_status:
            report = client.grade(
                problem, source, checked, timeout, on_status=on_status,
                on_submitted=submitted.append,
            )
    except ClientError as exc:
        raise _fail(err, str(exc)) from exc
    except KeyboardInterrupt:
        if submitted:
            err.print(f"interrupted; submission {submitted[0].id} is still graded on the server",
                      soft_wrap=True, highlight=False, markup=False)
        raise typer.Exit(130) from None
    if as_json:
        sys.stdout.write(report.model_dump_json() + "\n")
    else:
        print_report(clean_report(report))
    if report.verdict is Verdict.INTERNAL_ERROR:
        raise typer.Exit(2)
    raise typer.Exit(0 if report.accepted else 1)


def remote_problems(server: str, as_json: bool) -> None:
    """`jaxjudge problems --server URL`: the server's list, printed like the local one."""
    err = Console(stderr=True)
    try:
        with _client(server, err) as client:
            problems = client.problems(READ_TIMEOUT)
    except ClientError as exc:
        raise _fail(err, str(exc)) from exc
    if as_json:
        rows = [
            {"id": p.id, "title": p.title, "difficulty": p.difficulty, "tags": p.tags}
            for p in problems
        ]
        sys.stdout.write(json.dumps(rows) + "\n")
        return
    rows = [tuple(escape(clean_text(v)) for v in (p.id, p.title, p.difficulty, ", ".join(p.tags)))
            for p in problems]
    print_problems(Console(), rows)  # type: ignore[arg-type]


def remote_show(server: str, problem_id: str, starter: bool) -> None:
    """`jaxjudge show ID --server URL`: the statement (or starter code) from the server."""
    err = Console(stderr=True)
    try:
        with _client(server, err) as client:
            problem = client.problem(problem_id, READ_TIMEOUT)
    except ClientError as exc:
        raise _fail(err, str(exc)) from exc
    if starter:
        sys.stdout.write(clean_text(problem.starter))
        return
    Console().print(Markdown(math_as_code(clean_text(problem.statement))))


def register(cli: typer.Typer) -> None:
    """Add `submit` to the main `jaxjudge` command."""
    cli.command("submit")(submit)
