"""Fixtures shared across test modules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from api_fixtures import postgres_server
from sqlalchemy import create_engine, text

from jaxjudge.service.store import Store


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """One throwaway PostgreSQL cluster for the whole run (skips when it is not installed)."""
    try:
        with postgres_server() as url:
            yield url
    except LookupError as exc:
        pytest.skip(f"PostgreSQL tests skipped: {exc}")


def empty_postgres(url: str) -> None:
    """Drop everything (our tables, alembic_version, Procrastinate's schema objects)."""
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()


@pytest.fixture(scope="module")
def db(postgres_url: str) -> Iterator[str]:
    """The PostgreSQL database of one test module's queue tests, emptied and migrated once
    before that module's API nodes and workers race to migrate it."""
    empty_postgres(postgres_url)
    Store(postgres_url).close()
    yield postgres_url


@pytest.fixture(scope="module")
def pg_store(db: str) -> Iterator[Store]:
    """A store on `db`, for the test's own reads and writes."""
    store = Store(db)
    yield store
    store.close()
