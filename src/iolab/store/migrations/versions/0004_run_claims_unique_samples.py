"""Run claims and unique samples: runs.claimed_by/claimed_at, samples.case_key, and a unique
index on (run_id, case_key, block).

Two processes resuming one run at once stored the same samples twice.  A store written
before this revision may hold such duplicates: the first stored sample of each
(run, case, block) is kept and the later copies (with their metrics and bins) are deleted,
since they measured what the run had measured already.  Imports (no block) are untouched.

Revision ID: 0004
Revises: 0003_history_registry
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003_history_registry"
branch_labels: str | None = None
depends_on: str | None = None

_LATER_COPIES = """
    SELECT s.id FROM samples s
    WHERE s.block IS NOT NULL AND EXISTS (
        SELECT 1 FROM samples f
        WHERE f.run_id = s.run_id AND f.case_key = s.case_key AND f.block = s.block
          AND f.id < s.id)
"""


def upgrade() -> None:
    op.add_column("runs", sa.Column("claimed_by", sa.String(length=255), nullable=True))
    op.add_column("runs", sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("samples", sa.Column("case_key", sa.Text(), nullable=False, server_default=""))
    op.execute("UPDATE samples SET case_key = cell_key || '|' || COALESCE(variant, '')")
    for table in ("metrics", "histograms"):
        op.execute(f"DELETE FROM {table} WHERE sample_id IN ({_LATER_COPIES})")
    # a subquery on the table being deleted from: wrapped so MySQL-like rules never bite
    op.execute(f"DELETE FROM samples WHERE id IN (SELECT id FROM ({_LATER_COPIES}) AS later)")
    op.create_index(
        "uq_samples_run_id_case_key_block",
        "samples",
        ["run_id", "case_key", "block"],
        unique=True,
    )


def downgrade() -> None:
    # plain ALTER TABLE ... DROP COLUMN (SQLite >= 3.35): a batch copy of `samples` would
    # drop the table, and with foreign keys on, that deletes every metric through CASCADE
    op.drop_index("uq_samples_run_id_case_key_block", table_name="samples")
    op.drop_column("samples", "case_key")
    op.drop_column("runs", "claimed_at")
    op.drop_column("runs", "claimed_by")
