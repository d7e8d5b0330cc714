"""Bring a database to the newest schema with Alembic (SQLite and PostgreSQL alike).

`Store` calls `upgrade()` when it opens a database, so `make serve` and every API node or
worker migrate on start; `jaxjudge migrate` does the same on its own for operators who prefer
to migrate before rolling out. On PostgreSQL the upgrade holds a transaction-scoped advisory
lock, so several nodes starting at once migrate one after the other (the later ones find
nothing to do). A database created before migrations existed (by `create_all`: a
`submissions` table and no `alembic_version`) is stamped at the baseline first, keeping its
rows.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect, text
from sqlalchemy.engine import Engine

MIGRATIONS = Path(__file__).with_name("migrations")
BASELINE = "0001_baseline"
# pg_advisory_xact_lock key: "jaxjudge" read as ASCII digits, any constant would do.
_LOCK_KEY = 0x6A61786A75646765


def _config(connection: Connection) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def head() -> str:
    """The newest revision this code knows."""
    script = ScriptDirectory(str(MIGRATIONS))
    revision = script.get_current_head()
    assert revision is not None
    return revision


def current(engine: Engine) -> str | None:
    """The revision the database is at (None: not under migrations yet)."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> str | None:
    """Migrate the database to `revision` in one transaction; return the revision it is at."""
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
        tables = set(inspect(conn).get_table_names())
        config = _config(conn)
        if "submissions" in tables and "alembic_version" not in tables:
            command.stamp(config, BASELINE)
        command.upgrade(config, revision)
    return current(engine)


def include_name(name: str | None, type_: str, parent_names: object) -> bool:
    """Alembic's comparison covers our tables only: Procrastinate's (created by revision
    0002 from its own schema file) and an operator's unrelated ones are not ours to diff."""
    if type_ == "table":
        return name in {"submissions"}
    return True
