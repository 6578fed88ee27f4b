"""Initial schema: runs, run_tags, samples, metrics, histograms.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("label", sa.String(length=200), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("host", sa.String(length=255), nullable=True),
        sa.Column("plan_path", sa.Text(), nullable=True),
        sa.Column("plan_text", sa.Text(), nullable=True),
        sa.Column("plan_hash", sa.String(length=128), nullable=True),
        sa.Column("meta", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_runs"),
    )
    op.create_index("ix_runs_label", "runs", ["label"])

    op.create_table(
        "run_tags",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name="fk_run_tags_run_id_runs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "key", name="pk_run_tags"),
    )
    op.create_index("ix_run_tags_key_value", "run_tags", ["key", "value"])

    op.create_table(
        "samples",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("variant", sa.String(length=200), nullable=True),
        sa.Column("cell", sa.JSON(), nullable=False),
        sa.Column("cell_key", sa.Text(), nullable=False),
        sa.Column("block", sa.Integer(), nullable=True),
        sa.Column("position", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("tool", sa.String(length=64), nullable=True),
        sa.Column("tool_version", sa.String(length=64), nullable=True),
        sa.Column("format", sa.String(length=64), nullable=True),
        sa.Column("source", sa.Text(), nullable=True),
        sa.Column("caption", sa.Text(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("provenance", sa.JSON(), nullable=False),
        sa.Column("jobs", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name="fk_samples_run_id_runs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_samples"),
    )
    op.create_index("ix_samples_run_id_variant", "samples", ["run_id", "variant"])

    op.create_table(
        "metrics",
        sa.Column("sample_id", sa.Integer(), nullable=False),
        sa.Column("job", sa.String(length=200), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["sample_id"], ["samples.id"], name="fk_metrics_sample_id_samples", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("sample_id", "job", "name", name="pk_metrics"),
    )
    op.create_index("ix_metrics_name", "metrics", ["name"])

    op.create_table(
        "histograms",
        sa.Column("sample_id", sa.Integer(), nullable=False),
        sa.Column("job", sa.String(length=200), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("bin", sa.Float(), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["sample_id"],
            ["samples.id"],
            name="fk_histograms_sample_id_samples",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("sample_id", "job", "name", "bin", name="pk_histograms"),
    )


def downgrade() -> None:
    op.drop_table("histograms")
    op.drop_index("ix_metrics_name", table_name="metrics")
    op.drop_table("metrics")
    op.drop_index("ix_samples_run_id_variant", table_name="samples")
    op.drop_table("samples")
    op.drop_index("ix_run_tags_key_value", table_name="run_tags")
    op.drop_table("run_tags")
    op.drop_index("ix_runs_label", table_name="runs")
    op.drop_table("runs")
