"""What a report says about the replication design its samples actually had.

Read from the samples themselves (each lab sample measured on a fleet host that boots
kernels carries `provenance["boot"]`), not from the plan: a report must describe what
happened, e.g. a per-sample plan whose worker was power-cycled mid-run.
"""

from __future__ import annotations

from collections.abc import Sequence

from iolab.model.sample import Sample


def boot_design(samples: Sequence[Sample]) -> str | None:
    """One line about boots and samples, or None when no sample records a boot."""
    booted = [s for s in samples if isinstance(s.provenance.get("boot"), dict)]
    if not booted:
        return None
    boots = {str(s.provenance["boot"].get("boot_id")) for s in booted}
    warm = sum(int(s.provenance.get("warmups") or 0) for s in booted)
    warmed = f"; {warm} unmeasured warm-up samples before them (the plan's warmups)" if warm else ""
    if len(boots) == len(booted):
        return (
            f"replication: one boot per sample ({len(booted)} samples, {len(boots)} boots); "
            "kernel samples in balanced ABBA/BAAB orders" + warmed
        )
    return (
        f"replication: reboot per switch ({len(booted)} samples in {len(boots)} boots); "
        "samples sharing a boot are not independent replicates, so intervals may be too narrow"
        + warmed
    )
