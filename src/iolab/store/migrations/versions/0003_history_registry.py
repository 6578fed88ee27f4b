"""The regression registry: regressions, the keys they are known by, their status log.

Revision ID: 0003_history_registry
Revises: 0001
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0003_history_registry"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "regressions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("metric", sa.String(length=200), nullable=False),
        sa.Column("case_key", sa.Text(), nullable=False),
        sa.Column("case", sa.JSON(), nullable=False),
        sa.Column("dedup_key", sa.Text(), nullable=False),
        sa.Column("origin", sa.String(length=16), nullable=False),
        sa.Column("introduced_run_id", sa.Integer(), nullable=True),
        sa.Column("last_good_run_id", sa.Integer(), nullable=True),
        sa.Column("introduced_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("commit_range", sa.Text(), nullable=True),
        sa.Column("culprit", sa.Text(), nullable=True),
        sa.Column("change_pct", sa.Float(), nullable=True),
        sa.Column("ci_low_pct", sa.Float(), nullable=True),
        sa.Column("ci_high_pct", sa.Float(), nullable=True),
        sa.Column("p_value", sa.Float(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["introduced_run_id"],
            ["runs.id"],
            name="fk_regressions_introduced_run_id_runs",
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["last_good_run_id"],
            ["runs.id"],
            name="fk_regressions_last_good_run_id_runs",
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_regressions"),
    )
    op.create_index("ix_regressions_metric", "regressions", ["metric"])

    op.create_table(
        "regression_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("regression_id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("old_status", sa.String(length=16), nullable=True),
        sa.Column("new_status", sa.String(length=16), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("evidence_run_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["regression_id"],
            ["regressions.id"],
            name="fk_regression_events_regression_id_regressions",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["evidence_run_id"],
            ["runs.id"],
            name="fk_regression_events_evidence_run_id_runs",
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_regression_events"),
    )
    op.create_index("ix_regression_events_regression_id", "regression_events", ["regression_id"])

    op.create_table(
        "regression_keys",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("regression_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["regression_id"],
            ["regressions.id"],
            name="fk_regression_keys_regression_id_regressions",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("key", name="pk_regression_keys"),
    )
    op.create_index("ix_regression_keys_regression_id", "regression_keys", ["regression_id"])


def downgrade() -> None:
    op.drop_index("ix_regression_keys_regression_id", table_name="regression_keys")
    op.drop_table("regression_keys")
    op.drop_index("ix_regression_events_regression_id", table_name="regression_events")
    op.drop_table("regression_events")
    op.drop_index("ix_regressions_metric", table_name="regressions")
    op.drop_table("regressions")
