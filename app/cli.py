"""The `jaxjudge` console script: the grader's CLI plus `jaxjudge serve` (the HTTP service)."""

from __future__ import annotations

import logging
from typing import Annotated

import typer
from pydantic import ValidationError

from grader.cli import cli

__all__ = ["cli", "main"]


@cli.command("serve")
def serve_cmd(
    host: Annotated[str | None, typer.Option(help="Bind address [JAXJUDGE_HOST].")] = None,
    port: Annotated[int | None, typer.Option(help="Port [JAXJUDGE_PORT].")] = None,
    workers: Annotated[
        int | None, typer.Option(help="Concurrent grades [JAXJUDGE_WORKERS].")
    ] = None,
    unsafe_allow_missing_sandbox: Annotated[
        bool,
        typer.Option("--unsafe-allow-missing-sandbox",
                     help="UNSAFE: grade even when sandbox layers are missing "
                     "[JAXJUDGE_UNSAFE_ALLOW_MISSING_SANDBOX=1 or a list of layers]."),
    ] = False,
) -> None:
    """Run the HTTP service (settings from JAXJUDGE_* variables; options override them).

    Refuses to start (status 3) while a sandbox layer is missing, saying which, why it matters
    and the ways out, unless the unsafe opt-out names it."""
    import uvicorn

    from app.core.config import Settings
    from app.main import create_app
    from grader.sandbox import SandboxUnavailable, require_layers

    overrides: dict[str, object] = {"host": host, "port": port, "workers": workers}
    if unsafe_allow_missing_sandbox:
        overrides["unsafe_allow_missing_sandbox"] = "all"
    try:
        settings = Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        lines = [f"  {'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
        typer.echo("error: invalid settings:\n" + "\n".join(lines), err=True)
        raise typer.Exit(2) from exc
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger().setLevel(settings.log_level.upper())
    try:  # before uvicorn, for a plain message; start-up checks (and logs) again
        require_layers(settings.required_layers, settings.allowed_missing_layers)
    except SandboxUnavailable as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(3) from exc
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        # One process: the worker pool and the queue live in it.
        workers=1,
    )  # exits with status 3 if start-up fails


@cli.command("migrate")
def migrate_cmd(
    check: Annotated[
        bool, typer.Option("--check", help="Only report; exit 1 if the database is behind.")
    ] = False,
) -> None:
    """Migrate the database in JAXJUDGE_DATABASE_URL to the newest schema (Alembic).

    `serve` and `worker` do this on start too; run it first to roll out a schema change
    before the new code, or with --check in a deployment pipeline."""
    from app.core.config import Settings
    from app.migrate import current, head, upgrade
    from app.store import make_engine

    try:
        settings = Settings()
    except ValidationError as exc:
        lines = [f"  {'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
        typer.echo("error: invalid settings:\n" + "\n".join(lines), err=True)
        raise typer.Exit(2) from exc
    engine = make_engine(settings.database_url)
    try:
        at, newest = current(engine), head()
        if check:
            typer.echo(f"database at {at or 'no revision'}; code at {newest}")
            raise typer.Exit(0 if at == newest else 1)
        typer.echo(f"migrated {at or 'empty database'} -> {upgrade(engine)}")
    finally:
        engine.dispose()


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
