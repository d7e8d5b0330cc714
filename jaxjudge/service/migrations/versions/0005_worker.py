"""The grading worker of a submission's latest attempt (`jaxjudge worker`'s name,
`jaxjudge@host:pid`): an operator (and the submission's owner) sees which process holds a
running grade, and which one stored it.

Revision ID: 0005_worker
Revises: 0004_idempotency_key
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_worker"
down_revision = "0004_idempotency_key"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("worker", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("worker")
