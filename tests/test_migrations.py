"""Alembic migrations on a real SQLite file and a real PostgreSQL server: fresh databases,
databases from before migrations existed, models agreeing with the migrations, concurrent
start-ups, and the `jaxjudge migrate` command."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from conftest import empty_postgres
from sqlalchemy import Column, Integer, MetaData, String, Table, inspect, text
from sqlalchemy.engine import Engine

from jaxjudge.service.migrate import current, head, include_name, upgrade
from jaxjudge.service.store import Base, Store, make_engine

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/judge.db"
    url: str = request.getfixturevalue("postgres_url")
    empty_postgres(url)
    return url


def _diff(engine: Engine) -> list[object]:
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"include_name": include_name})
        return list(compare_metadata(context, Base.metadata))


def test_fresh_database_reaches_head_and_matches_the_models(db_url: str) -> None:
    store = Store(db_url)
    try:
        assert current(store.engine) == head()
        # The models and the migrations describe the same schema: a model change without a
        # migration (or the reverse) fails here.
        assert _diff(store.engine) == []
        record = store.create("p1", "run", b"x")
        assert store.get(record.id) is not None
    finally:
        store.close()


def _legacy_schema(engine: Engine) -> None:
    """What `create_all` made before migrations existed: the table, no alembic_version."""
    meta = MetaData()
    Table(
        "submissions",
        meta,
        *(
            Column(c.name, c.type, primary_key=c.primary_key, nullable=c.nullable,
                   unique=c.unique, autoincrement=c.autoincrement)
            for c in Base.metadata.tables["submissions"].columns
            if c.name in _BASELINE_COLUMNS
        ),
    )
    meta.create_all(engine)


_BASELINE_COLUMNS = {
    "seq", "id", "problem_id", "mode", "source", "source_bytes", "source_sha256", "status",
    "verdict", "score", "max_score", "report_json", "attempts", "created_at", "started_at",
    "finished_at",
}


def test_a_database_from_before_migrations_is_stamped_and_keeps_its_rows(db_url: str) -> None:
    engine = make_engine(db_url)
    _legacy_schema(engine)
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO submissions (id, problem_id, mode, source, source_bytes, "
            "source_sha256, status, attempts, created_at) VALUES ('old', 'p1', 'submit', "
            ":src, 1, 'h', 'done', 1, CURRENT_TIMESTAMP)"
        ), {"src": b"x"})
    assert current(engine) is None
    engine.dispose()
    store = Store(db_url)
    try:
        assert current(store.engine) == head()
        old = store.get("old")
        assert old is not None and old.status == "done"
        assert "alembic_version" in inspect(store.engine).get_table_names()
    finally:
        store.close()


def test_an_unrelated_table_is_left_alone(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/judge.db"
    engine = make_engine(url)
    meta = MetaData()
    Table("operator_notes", meta, Column("n", Integer, primary_key=True), Column("t", String(9)))
    meta.create_all(engine)
    assert upgrade(engine) == head()
    assert {"operator_notes", "submissions", "alembic_version"} <= set(
        inspect(engine).get_table_names()
    )
    engine.dispose()


@pytest.mark.postgres
def test_nodes_starting_together_migrate_one_after_the_other(postgres_url: str) -> None:
    empty_postgres(postgres_url)
    errors: list[BaseException] = []
    stores: list[Store] = []
    lock = threading.Lock()

    def start() -> None:
        try:
            s = Store(postgres_url)
            with lock:
                stores.append(s)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert errors == []
        assert len(stores) == 4
        assert current(stores[0].engine) == head()
    finally:
        for s in stores:
            s.close()


def _cli(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "JAXJUDGE_DATABASE_URL": url}
    return subprocess.run(
        [sys.executable, "-m", "jaxjudge.cli.service", "migrate", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )


def test_migrate_command_checks_and_upgrades(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/judge.db"
    behind = _cli(url, "--check")
    assert behind.returncode == 1, behind.stderr
    assert "no revision" in behind.stdout
    done = _cli(url)
    assert done.returncode == 0, done.stderr
    assert head() in done.stdout
    ok = _cli(url, "--check")
    assert ok.returncode == 0 and f"at {head()}" in ok.stdout
