"""Alembic environment: migrate the connection `jaxjudge.service.migrate` hands over, or (for the
`alembic` CLI, e.g. `alembic -c jaxjudge/service/migrations/alembic.ini revision --autogenerate -m
...`) the database named by JAXJUDGE_DATABASE_URL."""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy import Connection

from jaxjudge.service.migrate import include_name
from jaxjudge.service.store import Base, make_engine


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        # SQLite cannot ALTER most things in place: batch mode copies the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        include_name=include_name,  # Procrastinate's tables are not ours to autogenerate
    )
    with context.begin_transaction():
        context.run_migrations()


connection = context.config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    url = os.environ.get("JAXJUDGE_DATABASE_URL", "sqlite:///var/jaxjudge.db")
    engine = make_engine(url)
    with engine.connect() as conn:
        _run(conn)
        conn.commit()
    engine.dispose()
