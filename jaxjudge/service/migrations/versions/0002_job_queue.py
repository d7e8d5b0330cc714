"""The distributed job queue (issue #15): `submissions.owner` for per-token fairness and, on
PostgreSQL, Procrastinate's own schema (its jobs, workers and events tables and functions).

Procrastinate's schema is applied verbatim from the installed package
(`SchemaManager.get_schema()`) when its tables are absent, so a database already set up by
`procrastinate schema --apply` is left as it is. A later Procrastinate release that changes its
schema ships migration files (procrastinate/sql/migrations); apply them in a new revision.

Revision ID: 0002_job_queue
Revises: 0001_baseline
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_job_queue"
down_revision = "0001_baseline"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(
            sa.Column(
                "owner", sa.String(32), nullable=False, server_default="anonymous"
            )
        )
        batch.create_index("ix_submissions_owner_status", ["owner", "status"])
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    if "procrastinate_jobs" in sa.inspect(bind).get_table_names():
        return
    from procrastinate.schema import SchemaManager

    # The driver's own connection: the schema is many statements (simple query protocol, no
    # parameters, so its `%` and `:` are not placeholders for anyone).
    driver_conn = bind.connection.dbapi_connection
    assert driver_conn is not None
    with driver_conn.cursor() as cur:
        cur.execute(SchemaManager.get_schema())


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        # Procrastinate's objects are all prefixed; drop them with what depends on them.
        op.execute(sa.text("DROP TABLE IF EXISTS procrastinate_events, "
                           "procrastinate_periodic_defers, procrastinate_jobs, "
                           "procrastinate_workers CASCADE"))
        op.execute(sa.text(
            "DO $$ DECLARE f record; BEGIN FOR f IN SELECT p.oid::regprocedure AS sig "
            "FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = current_schema() AND p.proname LIKE 'procrastinate%' "
            "LOOP EXECUTE 'DROP FUNCTION ' || f.sig || ' CASCADE'; END LOOP; END $$"
        ))
        op.execute(sa.text("DROP TYPE IF EXISTS procrastinate_job_to_defer_v1, "
                           "procrastinate_job_event_type, procrastinate_job_status CASCADE"))
    with op.batch_alter_table("submissions") as batch:
        batch.drop_index("ix_submissions_owner_status")
        batch.drop_column("owner")
