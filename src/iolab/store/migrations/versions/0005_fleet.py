"""The fleet: test hosts, block attempts (leases), and the host that measured each sample.

`block_attempts` holds one row per (run, block, attempt), unique; the lease of docs/fleet.md.
Samples stored before this revision have no host (NULL).

Revision ID: 0005_fleet
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0005_fleet"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column("samples", sa.Column("host", sa.String(length=255), nullable=True))
    op.create_table(
        "fleet_hosts",
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("host_class", sa.String(length=100), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("drained", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("kernel", sa.String(length=255), nullable=True),
        sa.Column("boot_id", sa.String(length=64), nullable=True),
        sa.Column("current_job", sa.String(length=255), nullable=True),
        sa.Column("devices", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_fleet_hosts"),
    )
    op.create_table(
        "block_attempts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("block", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("host_class", sa.String(length=100), nullable=True),
        sa.Column("host", sa.String(length=255), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("after_decision", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name="fk_block_attempts_run_id_runs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_block_attempts"),
    )
    op.create_index(
        "uq_block_attempts_run_id_block_attempt",
        "block_attempts",
        ["run_id", "block", "attempt"],
        unique=True,
    )
    op.create_index("ix_block_attempts_state", "block_attempts", ["state"])


def downgrade() -> None:
    op.drop_index("ix_block_attempts_state", table_name="block_attempts")
    op.drop_index("uq_block_attempts_run_id_block_attempt", table_name="block_attempts")
    op.drop_table("block_attempts")
    op.drop_table("fleet_hosts")
    op.drop_column("samples", "host")
