"""A run's custom inputs (the learner's own, as JSON): the worker grades them beside the
examples, the reference computes their expected outputs.

Revision ID: 0006_custom_inputs
Revises: 0005_worker
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_custom_inputs"
down_revision = "0005_worker"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("custom_inputs", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("custom_inputs")
