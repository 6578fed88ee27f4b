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
