"""The plan an old 0-day writeback comparison implies: its matrix is in the cell names.

The robot's `compare` tables of 2011–2014 name each row by the case it measured,
`lkp-nex04/RAID0-12HDD-thresh=100M/ext4-100dd-1-3.5.0`: the test box, the storage (JBOD of 12
disks, md RAID0 or RAID5 over them), the dirty threshold (vm.dirty_bytes), the filesystem, the
number of dd writers, a run index and the base kernel; the column heads name the kernels
compared (`3.5.0 3.6.0-rc1+`).  The plan runs the same matrix — storage × writers × threshold —
on each kernel, writers as fio psync jobs writing 1 MiB blocks sequentially (what `dd bs=1M`
does), each to its own file, spread over the filesystems of a JBOD.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from iolab.model.comparison import Comparison

_CELL = re.compile(
    r"^(?P<box>[\w.-]+)/(?P<raid>JBOD|RAID\d+)-(?P<members>\d+)(?P<media>HDD|SSD)"
    r"-thresh=(?P<thresh>\d+[KMGT]?)/(?P<fs>ext4|xfs|btrfs)-(?P<writers>\d+)dd-(?P<run>\w+)"
    r"-(?P<kernel>\d+\.\d+[\w.+-]*)$"
)
_PER_CELL = 24 << 20  # iolab's choice: bytes written per sample (the report gives none)
_MEMBER = "32M"


@dataclass(frozen=True)
class CellPlan:
    text: str
    used: list[tuple[str, str, str]]
    notes: list[str]


def _order(values: set[str], key: object = None) -> list[str]:
    def size(v: str) -> int:
        unit = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
        return int(re.sub(r"\D", "", v)) * unit[re.sub(r"\d", "", v)]

    return sorted(values, key=size)


def cell_plan(tables: Sequence[Comparison]) -> CellPlan | None:
    """The plan of the first table whose every cell names a writeback case, or None."""
    from iolab.reproduce.draft import Draft, Ref, Variant
    from iolab.reproduce.writer import render

    for table in tables:
        cells = [(row, _CELL.match(row.cell or "")) for row in table.rows]
        if not cells or any(m is None for _, m in cells):
            continue
        found = [m for _, m in cells if m is not None]
        raids = sorted({m["raid"].lower() for m in found}, key=["jbod", "raid0", "raid1",
                       "raid4", "raid5", "raid6", "raid10"].index)  # fmt: skip
        members = {m["members"] for m in found}
        fstypes = {m["fs"] for m in found}
        if len(members) != 1 or len(fstypes) != 1:
            continue
        writers = sorted({m["writers"] for m in found}, key=int)
        thresholds = _order({m["thresh"] for m in found})
        first, last = cells[0][0].line, cells[-1][0].line
        where = f"lines {first}-{last}"
        example = cells[0][0].cell or ""
        kernels = [c for c in table.columns if c]
        per_writer = [f"{_PER_CELL // int(n) >> 10}k" for n in writers]
        job = "\n".join([
            "[global]", "directory={mnts}", "ioengine=psync", "rw=write", "bs=1M",
            "size={per_writer}", "numjobs={writers}", "thread", "group_reporting",
            "end_fsync=1", "fallocate=none", "", "[dd-writer]",
        ]) + "\n"  # fmt: skip
        media = found[0]["media"]
        draft = Draft(
            name=f"{found[0]['box']}-{next(iter(fstypes))}-writeback",
            description=(
                f"{next(iter(fstypes))} on {'/'.join(raids)} of {next(iter(members))} members, "
                f"{'/'.join(writers)} dd writers x dirty_bytes {'/'.join(thresholds)}, "
                f"kernels {' vs '.join(kernels) or 'as named'}"
            ),
            source="a 0-day writeback comparison (its cell names hold the matrix)",
            fstype=next(iter(fstypes)),
            fstype_ref=Ref(f"line {first}", example),
            target_note=(
                f"line {first}: {next(iter(members))} {media} members as loop images of "
                f"{_MEMBER} in RAM each (sparse): the report's disks are not reproduced"
            ),
            workload_kind="fio",
            fio_text=job,
            workload_ref=Ref(
                where, f"the cells' {'/'.join(writers)}dd: dd writers as fio psync 1M writes"
            ),
            kpis=["write.bw_bytes"],
            kpi_note="the table compares write throughput (MB/s) per cell",
        )
        draft.target_size = 32 << 20  # each member image (sparse, in RAM)
        draft.target_extra = {"members": int(next(iter(members)))}
        if any(r != "jbod" for r in raids):
            draft.target_extra |= {"chunk": "64k", "resync": "assume-clean"}
        ref = Ref(where, example)
        draft.matrix = [("raid", raids, ref), ("writers", writers, ref),
                        ("dirty_thresh", thresholds, ref)]  # fmt: skip
        draft.matrix_vars["writers"] = {"per_writer": per_writer}
        draft.matrix_paths["dirty_thresh"] = "knobs.sysctl.vm.dirty_bytes"
        draft.matrix_note = (
            f"the cell names ({where}) hold the matrix: storage x dd writers x dirty threshold"
        )
        if len(writers) > 1 or len(thresholds) > 1:
            # a guest under emulation takes up to a minute or more a sample (mkfs of 12
            # members): every storage kind, the fewest writers, the lowest threshold
            draft.quick_extra.append(
                (
                    "every storage kind, one cell each: a check that each stack runs",
                    "matrix",
                    {
                        "writers": {"values": writers[:1], "vars": {"per_writer": per_writer[:1]}},
                        "dirty_thresh": {
                            "path": "knobs.sysctl.vm.dirty_bytes",
                            "values": thresholds[:1],
                        },
                    },
                )
            )
        if len(kernels) == 2:
            draft.variants = [
                Variant(k, {"kernel": k}, Ref(f"line {table.line}", " ".join(kernels)))
                for k in kernels
            ]
            draft.baseline = kernels[0]
            draft.quick_here = "on the kernel this host runs: a check that the plan runs boots none"
            draft.variants_note = (
                "the table's columns: the kernels compared (set each to the `uname -r` of "
                "your build)"
            )
        draft.timeout = "300s"
        notes = [
            f"{where}: the report gives no write size: {_PER_CELL >> 20}M per sample, split "
            "over the writers (iolab's choice)",
            f"{where}: the dirty thresholds are the report's; on a machine with less memory "
            "than the robot's the largest may leave writeback unthrottled",
        ]
        draft.notes += notes
        used = [
            (f"line {table.line}", " ".join(kernels), "the kernels compared (variants)"),
            (where, example, f"{len(cells)} cells like it: {draft.matrix_note}"),
        ]
        return CellPlan(render(draft), used, notes)
    return None
