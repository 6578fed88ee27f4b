"""The two stack seed plans' quick profiles, end to end in one QEMU guest boot.

* examples/0day-ext4-raid-writeback.yaml --quick: ext4 over 12 members as jbod, md RAID0 and
  md RAID5, 1 and 10 writers, and the RAID5 stripe-cache variant; `iolab compare` of the
  run gives a verdict per RAID5 cell (stripe_cache_size 4096 against 256) with the per-layer
  table of the top device and all 12 members.
* examples/multipath-mq-deadline.yaml --quick: dm-multipath over 2 paths, the paths'
  scheduler mq-deadline against none; compare shows both paths in its per-layer table.

TCG figures mean nothing (docs/targets.md): the test checks that every sample ran, that the
writes landed where the stack sends them, and what compare prints — not who was faster.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from guest_fixtures import KERNEL_A, guest_image, no_leftovers
from iolab.guest import run

# TCG on a shared 2-core host: minutes, more than the suite's default 600 s under load
# 5-8 minutes of one boot: past the QEMU tests' share of `make test`, so it runs when asked
# (IOLAB_GUEST_LONG=1, as the kernel scenarios of tests/test_guest_kernels.py; docs/targets.md)
pytestmark = [
    pytest.mark.lab,
    pytest.mark.slow,
    pytest.mark.timeout(1600),
    pytest.mark.skipif(
        not os.environ.get("IOLAB_GUEST_LONG"),
        reason="the seed plans' quick profiles in a guest take minutes (IOLAB_GUEST_LONG=1)",
    ),
]
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

SCRIPT = r"""
set -u
C=/run/iolab-cmd
echo "=== 0day $(date +%s)"
iolab --db /root/z.db run --quick $C/0day.yaml >/root/z.out 2>&1; echo "zero-rc=$?"
tail -3 /root/z.out
iolab --db /root/z.db results --run 1 --json > /root/z.json
echo "ZERO $(python3 -c '
import json
rows = []
for s in json.load(open("/root/z.json")):
    m = s["metrics"]
    members = sorted(k for k in m if k.startswith("diskstats.member") and k.endswith(".write_ios"))
    rows.append([s["variant"], s["cell"], s["status"], s.get("reason"), m.get("write.bw_bytes"),
                 m.get("diskstats.top.write_ios"), len(members),
                 min((m[k] for k in members), default=None), m.get("md.stripe_cache_size")])
print(json.dumps(rows))
')"
echo "=== compare-0day $(date +%s)"
iolab --db /root/z.db compare run:1 > /root/zc.txt 2>&1; echo "zero-compare-rc=$?"
cat /root/zc.txt
echo "=== multipath $(date +%s)"
iolab --db /root/m.db run --quick $C/mp.yaml >/root/m.out 2>&1; echo "mp-rc=$?"
tail -3 /root/m.out
iolab --db /root/m.db compare run:1 > /root/mc.txt 2>&1; echo "mp-compare-rc=$?"
cat /root/mc.txt
echo "=== end $(date +%s)"
left="$(cat /proc/mdstat | grep -c '^md') $(dmsetup ls | grep -c iolab) $(losetup -a | wc -l)"
echo "left=$left"
"""


def test_seed_plans_quick_profiles_in_a_guest() -> None:
    files = {
        "0day.yaml": (EXAMPLES / "0day-ext4-raid-writeback.yaml").read_bytes(),
        "mp.yaml": (EXAMPLES / "multipath-mq-deadline.yaml").read_bytes(),
    }
    result = run.run_script(
        guest_image(),
        KERNEL_A,
        textwrap.dedent(SCRIPT),
        files=files,
        timeout_s=1500,
        memory_mib=3072,
    )
    out = result.boots[-1].output
    print(out)  # shown by pytest when an assertion fails
    assert result.exit_status == 0, out
    lines = out.splitlines()

    def line(prefix: str) -> str:
        found = [x for x in lines if x.startswith(prefix)]
        assert found, f"no line {prefix!r} in:\n{out}"
        return found[-1]

    assert line("zero-rc=") == "zero-rc=0", out
    rows = json.loads(line("ZERO ")[5:])
    assert len(rows) == 2 * (3 * 2 + 2)  # repeat 2 x (3 raid x 2 writers + 2 raid5 cells)
    for variant, cell, status, reason, bw, top, members, least, stripes in rows:
        assert status == "ok", (variant, cell, reason)
        assert bw > 0
        if cell["raid"] == "jbod":
            assert members == 0 and top is None  # 12 filesystems, kernel names
        else:
            assert members == 12, (variant, cell)
            assert top > 0
            if cell["raid"] == "raid5" or cell["writers"] == "10":
                # RAID5 writes data and parity to every member; 10 writers x 3M over 64k
                # chunks reach every RAID0 member too
                assert least > 0, (variant, cell)
        if cell["raid"] == "raid5":
            assert stripes == (4096 if variant == "stripe-cache-4096" else 256)
    compare = out.split("=== compare-0day", 1)[1].split("=== multipath", 1)[0]
    assert "zero-compare-rc=" in compare
    assert "per layer: where the I/O went" in compare
    assert "member11" in compare and "top" in compare
    # a verdict for each of the two RAID5 cells (stripe cache 4096 against the baseline)
    assert compare.count("raid=raid5") >= 2, compare

    assert line("mp-rc=") == "mp-rc=0", out
    mp = out.split("=== multipath", 1)[1]
    assert "per layer: where the I/O went" in mp
    assert "path0" in mp and "path1" in mp
    assert "write.bw_bytes" in mp
    assert line("left=") == "left=0 0 0", out
    no_leftovers()


THREADS = Path(__file__).resolve().parent / "data" / "threads" / "archived"

# one drafted plan's quick profile in a guest: its samples' status, cell and the metrics that
# show where the I/O went, as one JSON line
DRAFTED = r"""
set -u
echo "=== start $(date +%s)"
iolab --db /root/r.db run --quick -q /run/iolab-cmd/plan.yaml >/root/r.out 2>&1; echo "rc=$?"
tail -3 /root/r.out
echo "=== end $(date +%s)"
iolab --db /root/r.db results --run 1 --format json > /root/r.json
echo "ROWS $(python3 -c '
import json
rows = []
for s in json.load(open("/root/r.json")):
    m = s["metrics"]
    rows.append([s["cell"], s["status"], s.get("reason"),
                 {k: v for k, v in m.items() if k.startswith(("write.", "dm.", "md.stripe"))
                  or (k.startswith("diskstats.") and k.endswith(".write_ios"))}])
print(json.dumps(rows))
')"
left="$(cat /proc/mdstat | grep -c '^md') $(dmsetup ls | grep -c iolab) $(losetup -a | wc -l)"
echo "left=$left"
"""


def _drafted_quick_in_a_guest(thread: str, timeout_s: int) -> list[list[object]]:
    """`iolab reproduce` of `thread` here, its plan run with --quick in a guest on the guest's
    own kernel (the quick profiles drop the threads' kernel variants: the guest boots none of
    them); the samples, and nothing of iolab's left in the guest or here."""
    from iolab.reproduce.service import reproduce

    plan = reproduce((THREADS / f"{thread}.txt").read_text(), thread).plan_text
    result = run.run_script(
        guest_image(),
        KERNEL_A,
        textwrap.dedent(DRAFTED),
        files={"plan.yaml": plan.encode()},
        timeout_s=timeout_s,
        memory_mib=3072,
    )
    out = result.boots[-1].output
    print(out)  # shown by pytest when an assertion fails
    assert result.exit_status == 0, out
    lines = out.splitlines()

    def line(prefix: str) -> str:
        found = [x for x in lines if x.startswith(prefix)]
        assert found, f"no line {prefix!r} in:\n{out}"
        return found[-1]

    assert line("rc=") == "rc=0", out
    assert line("left=") == "left=0 0 0", out
    no_leftovers()
    rows: list[list[object]] = json.loads(line("ROWS ")[5:])
    return rows


def test_drafted_multipath_plan_quick_in_a_guest() -> None:
    """The multipath thread's draft: two maps in place of its /dev/dm-0 and /dev/dm-1, each
    over its own two paths, the paths' mq-deadline against none."""
    rows = _drafted_quick_in_a_guest("multipath-mq-deadline", 900)
    assert len(rows) == 3 * 2  # 3 blocks x (mq-deadline, none) on the paths
    assert {c["scheduler"] for c, _, _, _ in rows} == {"mq-deadline", "none"}  # type: ignore[index]
    for cell, status, reason, metrics in rows:
        assert status == "ok", (cell, reason)
        assert isinstance(metrics, dict)
        assert metrics["write.iops"] > 0
        assert metrics["dm.paths_active"] == 4  # two maps, two paths each
        # both maps written (the job on each of the mail's devices), over all four paths
        for role in ("top0", "top1", "path0", "path1", "path2", "path3"):
            assert metrics[f"diskstats.{role}.write_ios"] > 0, (cell, role)


def test_drafted_raid_plan_quick_in_a_guest() -> None:
    """The RAID writeback thread's draft: ext4 on 12 members as jbod, md RAID0 and md RAID5
    (its quick profile: one writer, the lowest threshold, every storage kind)."""
    rows = _drafted_quick_in_a_guest("ext4-raid-writeback", 1500)
    assert len(rows) == 3 * 3  # 3 blocks x (jbod, raid0, raid5)
    cells = {(c["raid"], c["writers"], c["dirty_thresh"]) for c, _, _, _ in rows}  # type: ignore[index]
    assert cells == {(r, "1", "100M") for r in ("jbod", "raid0", "raid5")}
    for cell, status, reason, metrics in rows:
        assert status == "ok", (cell, reason)
        assert isinstance(metrics, dict) and isinstance(cell, dict)
        assert metrics["write.bw_bytes"] > 0
        if cell["raid"] == "raid5":
            assert metrics["md.stripe_cache_size"] > 0  # the array's own evidence
