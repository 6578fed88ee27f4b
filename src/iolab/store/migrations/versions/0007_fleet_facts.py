"""Hosts register facts only; runs can be cancelled.

`fleet_hosts` loses `power_cycle` (a command a host registered and the controller ran: the
controller's own fleet.toml has it now) and gains the names of the host's devices, what it
provides and its iolab version.  `run_cancels` holds the requests of `iolab cancel RUN`.

Revision ID: 0007_fleet_facts
Revises: 0006_kernels
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0007_fleet_facts"
down_revision: str | None = "0006_kernels"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("fleet_hosts") as batch:
        batch.drop_column("power_cycle")
        batch.add_column(sa.Column("device_names", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("provides", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("version", sa.String(length=64), nullable=True))
    op.create_table(
        "run_cancels",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("requested_by", sa.String(length=255), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name="fk_run_cancels_run_id_runs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", name="pk_run_cancels"),
    )


def downgrade() -> None:
    op.drop_table("run_cancels")
    with op.batch_alter_table("fleet_hosts") as batch:
        batch.drop_column("version")
        batch.drop_column("provides")
        batch.drop_column("device_names")
        batch.add_column(sa.Column("power_cycle", sa.JSON(), nullable=True))
