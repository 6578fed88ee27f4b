"""One test box, kernels and all (`iolab ab PLAN --here`), in a QEMU guest booting real Debian
kernels: no broker, no second machine, a SQLite store on the box.

The guest is the box.  Its first boot runs `iolab ab plan.yaml --here`, which installs
`iolab-resume-1.service`, asks for the first sample's kernel and kexecs; every later boot,
systemd starts the unit, which judges the boot, measures one sample and kexecs again, until
the A/B's budget is spent; the last process writes the report and removes the unit.  The
guest's run script only waits for the run to end and prints what it finds.

TCG timings mean nothing: this checks the mechanism.  Each sample is a boot (1.5-2.5 min here),
so it runs in the long guest tier (IOLAB_GUEST_LONG=1, as bench/guest-kernels runs them).
"""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest

from guest_fixtures import (
    KERNEL_A,
    KERNEL_B,
    check_paired_orders,
    check_samples,
    guest_image,
    write_plan,
)
from iolab.guest import run

pytestmark = [
    pytest.mark.lab,
    pytest.mark.slow,
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("qemu-system-x86_64") is None,
        reason="needs root and QEMU",
    ),
    pytest.mark.skipif(
        not os.environ.get("IOLAB_GUEST_LONG"),
        reason="five boots under TCG (IOLAB_GUEST_LONG=1, or bench/guest-kernels)",
    ),
]
UNIT = "iolab-resume-1.service"

SCRIPT = textwrap.dedent(
    f"""\
    set -u
    touch "$IOLAB_STAY"   # in /run: gone with each boot, so made again at each
    db=/root/s.db
    if [ ! -e /root/plan.yaml ]; then
      cp /run/iolab-cmd/plan.yaml /root/plan.yaml
      iolab --db $db ab /root/plan.yaml --here --max-blocks 2 --format json \\
          -o /root/report.json >/root/first.out 2>&1
      echo "first-exit $?"
      cat /root/first.out
      echo "enabled: $(systemctl is-enabled {UNIT})"
      sleep 900   # the kexec ends this boot
      exit 3
    fi
    # the unit goes when the run ends (a cheap test: a Python poll would slow the sample)
    while [ -e /etc/systemd/system/{UNIT} ]; do sleep 5; done
    s=$(/opt/iolab/venv/bin/python3 -c "
    from iolab.store import open_reader
    with open_reader('$db') as s:
        print(s.run(1).status)")
    rm -f "$IOLAB_STAY"
    echo "run-status: $s"
    echo "unit-files-left: $(ls /etc/systemd/system/{UNIT} \\
        /etc/systemd/system/multi-user.target.wants/{UNIT} 2>/dev/null | wc -l)"
    echo "--- journal"
    journalctl -u {UNIT} --no-pager -o cat | tail -n 30
    iolab --db $db results --run 1 --json >/root/results.json
    echo "--- results"
    cat /root/results.json
    echo "--- report"
    cat /root/report.json
    """
)


@pytest.mark.timeout(7200)
def test_kernel_ab_on_one_box(tmp_path: Path) -> None:
    """An A/B of two kernels over two blocks on the box itself: five boots (the first on
    the image's kernel, then one per sample), each sample on its variant's kernel and
    command line in a boot of its own, blocks in ABBA or BAAB order, the report written by
    the last boot's process, and the resume unit gone at the end."""
    img = guest_image()
    plan = write_plan(tmp_path / "plan.yaml", 2)
    result = run.run_script(
        img, KERNEL_A, SCRIPT, files={"plan.yaml": plan.read_bytes()}, timeout_s=7000
    )
    first, *later = result.boots
    assert result.exit_status == 0, result.output
    assert "first-exit 0" in first.output, first.output
    assert f"{UNIT} continues the run after the boot" in first.output, first.output
    assert "enabled: enabled" in first.output, first.output
    last = later[-1].output
    head, _, rest = last.partition("--- results\n")
    results, _, report = rest.partition("--- report\n")
    assert "run-status: finished" in head, last
    assert "unit-files-left: 0" in head, last
    samples = json.loads(results)
    check_samples(samples, 2)
    # one boot per sample, in the order the samples were measured, each on its kernel
    by_boot = {s["provenance"]["boot"]["boot_id"]: s for s in samples}
    assert [b.boot_id for b in later] == [
        s["provenance"]["boot"]["boot_id"]
        for s in sorted(samples, key=lambda s: (s["block"], s["position"]))
    ], [(b.release, b.boot_id) for b in result.boots]
    wanted = {"old": KERNEL_B, "new": KERNEL_A}
    assert all(b.release == wanted[by_boot[b.boot_id]["variant"]] for b in later)
    check_paired_orders(samples)
    assert "one boot per sample (4 samples, 4 boots)" in json.dumps(json.loads(report))
