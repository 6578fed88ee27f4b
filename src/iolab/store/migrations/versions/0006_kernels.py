"""Kernels under test: a block attempt waiting for its host to boot, and what a host booted.

`block_attempts` gains the kernel a `booting` attempt waits for, the boot id its host left
and when the boot began (the controller's boot timeout counts from it); `fleet_hosts` gains
the command line of the host's boot and the host's out-of-band `power_cycle` hook, which the
controller runs (docs/kernels.md).

Revision ID: 0006_kernels
Revises: 0005_fleet
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0006_kernels"
down_revision: str | None = "0005_fleet"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column("block_attempts", sa.Column("boot_kernel", sa.String(255), nullable=True))
    op.add_column("block_attempts", sa.Column("boot_from", sa.String(64), nullable=True))
    op.add_column("block_attempts", sa.Column("boot_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("fleet_hosts", sa.Column("cmdline", sa.Text(), nullable=True))
    op.add_column("fleet_hosts", sa.Column("power_cycle", sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column("fleet_hosts", "power_cycle")
    op.drop_column("fleet_hosts", "cmdline")
    op.drop_column("block_attempts", "boot_at")
    op.drop_column("block_attempts", "boot_from")
    op.drop_column("block_attempts", "boot_kernel")
