"""Submission callbacks (webhooks, issue #15): the checked URL and its delivery state.

`callback_state` is NULL for a submission without a callback, `pending` until the callback is
delivered or given up (`delivered` / `failed`); `callback_attempts` counts delivery attempts
and fences their records; `callback_next_at` lets a restarted server re-schedule a pending
retry.

On PostgreSQL, `jaxjudge_delivery_workers` tags the Procrastinate worker rows that deliver
callbacks (each `jaxjudge worker` runs one beside its grading worker), so API nodes count only
grading workers; a row goes with its worker's (ON DELETE CASCADE).

Revision ID: 0003_callbacks
Revises: 0002_job_queue
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_callbacks"
down_revision = "0002_job_queue"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("callback_url", sa.String(2048), nullable=True))
        batch.add_column(sa.Column("callback_state", sa.String(16), nullable=True))
        batch.add_column(
            sa.Column("callback_attempts", sa.Integer(), nullable=False, server_default="0")
        )
        batch.add_column(sa.Column("callback_last_status", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("callback_last_error", sa.Text(), nullable=True))
        batch.add_column(
            sa.Column("callback_next_at", sa.DateTime(timezone=True), nullable=True)
        )
        batch.add_column(
            sa.Column("callback_delivered_at", sa.DateTime(timezone=True), nullable=True)
        )
        batch.create_index("ix_submissions_callback_state", ["callback_state"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(sa.text(
            "CREATE TABLE jaxjudge_delivery_workers (worker_id bigint PRIMARY KEY "
            "REFERENCES procrastinate_workers(id) ON DELETE CASCADE)"
        ))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(sa.text("DROP TABLE IF EXISTS jaxjudge_delivery_workers"))
    with op.batch_alter_table("submissions") as batch:
        batch.drop_index("ix_submissions_callback_state")
        for column in ("callback_delivered_at", "callback_next_at", "callback_last_error",
                       "callback_last_status", "callback_attempts", "callback_state",
                       "callback_url"):
            batch.drop_column(column)
