"""Fixtures shared across test modules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from api_fixtures import postgres_server
from sqlalchemy import create_engine, text


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
