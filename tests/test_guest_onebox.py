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
from iolab.guest.recipe import DEFAULT_KERNELS

pytestmark = [
    pytest.mark.lab,
    pytest.mark.slow,
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("qemu-system-x86_64") is None,
        reason="needs root and QEMU",
    ),
    pytest.mark.skipif(
        not os.environ.get("IOLAB_GUEST_LONG"),
        reason="several boots under TCG (IOLAB_GUEST_LONG=1, or bench/guest-kernels)",
    ),
]
UNIT = "iolab-resume-1.service"
KERNEL_C = DEFAULT_KERNELS[2]

SCRIPT = textwrap.dedent(
    f"""\
    set -u
    touch "$IOLAB_STAY"   # in /run: gone with each boot, so made again at each
    db=/root/s.db
    # the guest's source disk may show up after its mount gave up (a TCG guest on a loaded
    # host): mount it, and start the unit if its start at boot failed for want of it
    if ! mountpoint -q /opt/iolab/src; then
      until mount /opt/iolab/src 2>/dev/null; do sleep 5; done
      echo "source disk mounted late"
      if [ -e /etc/systemd/system/{UNIT} ]; then
        systemctl reset-failed {UNIT}; systemctl start --no-block {UNIT}
      fi
    fi
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
    # the unit's file goes when the run ends, then its process records the end and exits
    # (cheap tests: a Python poll would slow the sample)
    while [ -e /etc/systemd/system/{UNIT} ] || systemctl is-active --quiet {UNIT}; do
      sleep 5
    done
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


WRONG_SCRIPT = textwrap.dedent(
    f"""\
    set -u
    touch "$IOLAB_STAY"
    db=/root/s.db
    # the guest's source disk may show up after its mount gave up (a TCG guest on a loaded
    # host): mount it, and start the unit if its start at boot failed for want of it
    if ! mountpoint -q /opt/iolab/src; then
      until mount /opt/iolab/src 2>/dev/null; do sleep 5; done
      echo "source disk mounted late"
      if [ -e /etc/systemd/system/{UNIT} ]; then
        systemctl reset-failed {UNIT}; systemctl start --no-block {UNIT}
      fi
    fi
    if [ ! -e /root/plan.yaml ]; then
      cp /run/iolab-cmd/plan.yaml /run/iolab-cmd/host.toml /root/
      IOLAB_HOST_CONFIG=/root/host.toml iolab --db $db ab /root/plan.yaml --here \\
          --max-blocks 2 >/root/first.out 2>&1
      echo "first-exit $?"
      cat /root/first.out
      sleep 900
      exit 3
    fi
    while [ -e /etc/systemd/system/{UNIT} ] || systemctl is-active --quiet {UNIT}; do
      sleep 5
    done
    rm -f "$IOLAB_STAY"
    echo "release: $(uname -r)"
    /opt/iolab/venv/bin/python3 -c "
    from iolab.store import leases, open_reader, open_store
    with open_store('$db') as s:
        print('run-status:', s.run(1).status)
        print('samples:', len(s.samples(run_id=1, status=None)))
        print('attempts:', ' '.join(a.state for a in leases.attempts(s, 1)))"
    echo "--- journal"
    journalctl -u {UNIT} --no-pager -o cat | tail -n 20
    """
)


@pytest.mark.timeout(5400)
def test_wrong_kernel_on_one_box_ends_the_run(tmp_path: Path) -> None:
    """The box's boot hook kexecs another kernel than the one asked for: after that boot
    the unit judges it `wrong_kernel`, stores nothing, and — the box being the only host —
    ends the run in one line (exit 4) and removes itself."""
    img = guest_image()
    plan = write_plan(tmp_path / "plan.yaml", 1)
    wrong = (
        f"kexec -l /boot/vmlinuz-{KERNEL_C} --initrd=/boot/initrd.img-{KERNEL_C} "
        "--reuse-cmdline && systemctl kexec"
    )
    hooks = f"[hooks]\nboot = {json.dumps(['sh', '-c', wrong])}\n"
    result = run.run_script(
        img,
        KERNEL_A,
        WRONG_SCRIPT,
        files={"plan.yaml": plan.read_bytes(), "host.toml": hooks.encode()},
        timeout_s=5200,
    )
    first, *later = result.boots
    assert result.exit_status == 0, result.output
    assert "first-exit 0" in first.output, first.output
    assert [b.release for b in later] == [KERNEL_C], result.output
    out = later[-1].output
    assert "run-status: failed" in out and "samples: 0" in out, out
    assert "attempts: wrong_kernel" in out, out
    errors = [ln for ln in out.splitlines() if ln.startswith("iolab: ")]
    assert len(errors) == 1, out
    assert "wrong_kernel" in errors[0] and KERNEL_C in errors[0], errors
    assert "only host" in errors[0] and "status=4" in out, out
