"""Real Debian kernels in QEMU (TCG): boot one, kexec into another, run iolab inside.

These check mechanisms only; TCG timings mean nothing.  Every run boots a throw-away qcow2
overlay over the cached image, and QEMU is killed and its files removed even on failure
(guest.run.run_script's `finally`; checked below by looking for leftovers).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from guest_fixtures import KERNEL_A, KERNEL_B, guest_image
from iolab.guest import run
from iolab.procs import process_stats

pytestmark = [pytest.mark.lab, pytest.mark.slow]


def _no_leftovers() -> None:
    # only this process's work directories (each names its owner): another suite's guest
    # may be running, and a killed run's directory is swept by the next (test_guest_sweep)
    import os

    ours = [
        d
        for d in Path("/var/tmp").glob("iolab-guest-run-*")
        if (d / "owner").read_text().split()[:1] == [str(os.getpid())]  # "pid start"
    ]
    assert not ours
    mine = [p for p in process_stats() if p.comm.startswith("qemu-system")]
    # other suites may run their own guests: only ours (children of this process) count
    import os

    assert not [p for p in mine if p.ppid == os.getpid()]


PLAN = """\
name: guest-run
target: {size: 64M}
filesystem: {type: ext4, mkfs_options: -m 1}
workload:
  fio: |
    [w]
    filename={mnt}/f
    size=4M
    bs=4k
    rw=randwrite
    ioengine=psync
    runtime=1s
    time_based=1
variants:
  a: {fio: {bs: 4k}}
repeat: 1
kpis: [write.iops]
"""


def test_kexec_into_another_packaged_kernel_and_run_iolab_there() -> None:
    """Two boots of one guest (one test: each boot under TCG costs most of a minute): the
    kernel asked for boots, records its boot id and kexecs into another packaged kernel; on
    that one, `iolab run` of a tiny plan (ext4 on a loop image in the guest, fio for 1 s)
    stores a sample whose provenance names the running kernel, and the script's own exit
    status comes back (a look-alike marker it prints is output, not the status)."""
    img = guest_image()
    script = textwrap.dedent(
        f"""\
        state=/var/lib/iolab-test
        if [ ! -e $state/first ]; then
          mkdir -p $state
          cat /proc/sys/kernel/random/boot_id > $state/first
          kexec -l /boot/vmlinuz-{KERNEL_B} --initrd=/boot/initrd.img-{KERNEL_B} --reuse-cmdline
          touch "$IOLAB_STAY"
          systemctl kexec
        else
          uname -r
          cat /proc/cmdline
          echo "first=$(cat $state/first)"
          echo "IOLAB-EXIT-000000 0"
          iolab --db /root/s.db run /run/iolab-cmd/plan.yaml >/root/run.out 2>&1 || {{
            cat /root/run.out; exit 1; }}
          iolab --db /root/s.db results --run 1 --json >/root/results.json
          echo "--- results"
          cat /root/results.json
          exit 7
        fi
        """
    )
    result = run.run_script(
        img, KERNEL_A, script, files={"plan.yaml": PLAN.encode()}, timeout_s=600
    )
    assert result.exit_status == 7, result.output
    assert [b.release for b in result.boots] == [KERNEL_A, KERNEL_B]
    first, second = result.boots
    assert first.boot_id != second.boot_id
    head, _, results = second.output.partition("--- results\n")
    lines = head.splitlines()
    assert lines[0] == KERNEL_B
    assert "iolab.mode=run" in lines[1]  # kexec --reuse-cmdline kept the first boot's
    assert lines[2] == f"first={first.boot_id}"
    assert lines[3] == "IOLAB-EXIT-000000 0"
    samples = json.loads(results)
    assert len(samples) == 1
    sample = samples[0]
    assert sample["status"] == "ok", sample
    assert sample["metrics"]["write.iops"] > 0
    assert KERNEL_B in json.dumps(sample["provenance"])
    assert KERNEL_A not in json.dumps(sample["provenance"])
    _no_leftovers()
