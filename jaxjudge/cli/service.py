"""The `jaxjudge` console script: the grader's CLI plus `jaxjudge serve` (the HTTP service)
and `jaxjudge worker` (a grading process of the PostgreSQL job queue)."""

from __future__ import annotations

import signal
import sys
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import ValidationError

from jaxjudge.cli.main import cli, register_commands

if TYPE_CHECKING:
    from jaxjudge.service.config import Settings

__all__ = ["cli", "main"]

_UNSAFE_HELP = (
    "UNSAFE: grade even when sandbox layers are missing "
    "[JAXJUDGE_UNSAFE_ALLOW_MISSING_SANDBOX=1 or a list of layers]."
)


def _settings_or_exit(overrides: dict[str, object]) -> Settings:
    """Settings from JAXJUDGE_* plus the given (non-None) options; exit 2 naming each bad one."""
    from jaxjudge.service.config import Settings

    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        lines = [f"  {'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}"
                 for e in exc.errors()]
        typer.echo("error: invalid settings:\n" + "\n".join(lines), err=True)
        raise typer.Exit(2) from exc


def _setup_logging(settings: Settings) -> None:
    from jaxjudge.service.logs import configure_logging

    configure_logging(settings.log_level, settings.log_format)


def _exit_zero_on_sigterm() -> None:
    """uvicorn stops gracefully on SIGTERM, then raises the signal again to whatever handler
    was there before it: the default one made a clean stop exit with -15. A supervisor (and a
    rolling restart) should see 0."""

    def exit_zero(signum: int, frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, exit_zero)


def _require_sandbox_or_exit(settings: Settings) -> None:
    """Fail closed before starting anything: exit 3 naming each missing sandbox layer."""
    from jaxjudge.isolation.sandbox import SandboxUnavailable, require_layers

    try:
        require_layers(settings.required_layers, settings.allowed_missing_layers)
    except SandboxUnavailable as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(3) from exc


@cli.command("serve")
def serve_cmd(
    host: Annotated[str | None, typer.Option(help="Bind address [JAXJUDGE_HOST].")] = None,
    port: Annotated[int | None, typer.Option(help="Port [JAXJUDGE_PORT].")] = None,
    workers: Annotated[
        int | None, typer.Option(help="Concurrent grades [JAXJUDGE_WORKERS].")
    ] = None,
    unsafe_allow_missing_sandbox: Annotated[
        bool, typer.Option("--unsafe-allow-missing-sandbox", help=_UNSAFE_HELP)
    ] = False,
) -> None:
    """Run the HTTP service (settings from JAXJUDGE_* variables; options override them).

    With the local queue (the default) it grades too, so it refuses to start (status 3) while a
    sandbox layer is missing, saying which, why it matters and the ways out, unless the unsafe
    opt-out names it. With JAXJUDGE_QUEUE=postgres it only stores and enqueues: `jaxjudge
    worker` processes grade, and they make that check."""
    import uvicorn

    from jaxjudge.service.main import create_app

    overrides: dict[str, object] = {"host": host, "port": port, "workers": workers}
    if unsafe_allow_missing_sandbox:
        overrides["unsafe_allow_missing_sandbox"] = "all"
    settings = _settings_or_exit(overrides)
    _setup_logging(settings)
    if settings.queue == "local":  # an API node of the postgres queue never grades
        _require_sandbox_or_exit(settings)  # before uvicorn, for a plain message; start-up too
    _exit_zero_on_sigterm()
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        log_config=None,  # our handler and format (_setup_logging) for uvicorn's lines too
        # One process: the worker pool and the queue live in it (local queue), or the
        # LISTEN connection (postgres queue; run more API nodes as more processes).
        workers=1,
    )  # exits with status 3 if start-up fails


@cli.command("worker")
def worker_cmd(
    concurrency: Annotated[
        int | None,
        typer.Option("--concurrency", "-c", min=1, help="Concurrent grades [JAXJUDGE_WORKERS]."),
    ] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option("--metrics-port", min=1, max=65535,
                     help="Serve Prometheus metrics on this port [JAXJUDGE_WORKER_METRICS_PORT]."),
    ] = None,
    metrics_addr: Annotated[
        str | None,
        typer.Option("--metrics-addr",
                     help="Address of the metrics server, no auth [JAXJUDGE_WORKER_METRICS_ADDR]."),
    ] = None,
    unsafe_allow_missing_sandbox: Annotated[
        bool, typer.Option("--unsafe-allow-missing-sandbox", help=_UNSAFE_HELP)
    ] = False,
) -> None:
    """Grade submissions from the PostgreSQL job queue until SIGTERM (JAXJUDGE_QUEUE=postgres,
    JAXJUDGE_DATABASE_URL=postgresql://...; settings from JAXJUDGE_* variables).

    Run as many as needed, on any machines that reach the database. Refuses to start (status
    3) while a sandbox layer is missing, exactly like serve. On SIGTERM, in-flight grades get
    JAXJUDGE_WORKER_SHUTDOWN_SECONDS to finish; the rest go to another worker."""
    import asyncio

    from jaxjudge.isolation.sandbox import SandboxUnavailable
    from jaxjudge.service.worker import WorkerDied, run_worker

    overrides: dict[str, object] = {
        "workers": concurrency,
        "worker_metrics_port": metrics_port,
        "worker_metrics_addr": metrics_addr,
    }
    if unsafe_allow_missing_sandbox:
        overrides["unsafe_allow_missing_sandbox"] = "all"
    settings = _settings_or_exit(overrides)
    if settings.queue != "postgres":
        typer.echo("error: jaxjudge worker grades the PostgreSQL job queue: set "
                   "JAXJUDGE_QUEUE=postgres and JAXJUDGE_DATABASE_URL=postgresql://... "
                   "(with the default local queue, `jaxjudge serve` grades by itself)", err=True)
        raise typer.Exit(2)
    _setup_logging(settings)
    _require_sandbox_or_exit(settings)
    try:
        asyncio.run(run_worker(settings))
    except SandboxUnavailable as exc:  # a layer vanished between the two checks
        raise typer.Exit(3) from exc
    except WorkerDied as exc:  # logged as critical: let the supervisor restart the process
        raise typer.Exit(1) from exc


@cli.command("migrate")
def migrate_cmd(
    check: Annotated[
        bool, typer.Option("--check", help="Only report; exit 1 if the database is behind.")
    ] = False,
) -> None:
    """Migrate the database in JAXJUDGE_DATABASE_URL to the newest schema (Alembic).

    `serve` and `worker` do this on start too; run it first to roll out a schema change
    before the new code, or with --check in a deployment pipeline."""
    from jaxjudge.service.migrate import current, head, upgrade
    from jaxjudge.service.store import make_engine

    settings = _settings_or_exit({})
    engine = make_engine(settings.database_url)
    try:
        at, newest = current(engine), head()
        if check:
            typer.echo(f"database at {at or 'no revision'}; code at {newest}")
            raise typer.Exit(0 if at == newest else 1)
        typer.echo(f"migrated {at or 'empty database'} -> {upgrade(engine)}")
    finally:
        engine.dispose()


def main(obj: object = None) -> None:
    """Run the command line; `obj` becomes the commands' Click context object (jaxjudge.cli.launch
    passes the stages it started for a one-off grade)."""
    register_commands(sys.argv[1:])
    cli(obj=obj)


if __name__ == "__main__":
    main()
