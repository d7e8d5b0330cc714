"""Idempotency keys on submissions: a client that retries a POST whose answer it never got
(a node restarted, a connection dropped) sends the same `Idempotency-Key` and gets the same
submission back instead of a second one. Unique per owner (token).

Revision ID: 0004_idempotency_key
Revises: 0003_callbacks
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_idempotency_key"
down_revision = "0003_callbacks"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("idempotency_key", sa.String(64), nullable=True))
        batch.create_index(
            "ux_submissions_owner_idempotency_key", ["owner", "idempotency_key"], unique=True
        )


def downgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.drop_index("ux_submissions_owner_idempotency_key")
        batch.drop_column("idempotency_key")
