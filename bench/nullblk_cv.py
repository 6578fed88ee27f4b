"""The noise of a null_blk target next to a loop image's, for the same fio job, in a guest.

Usage:  .venv/bin/python bench/nullblk_cv.py [--repeat 10] [--runtime 2s] [--memory 1536]

Boots the default guest image's kernel (QEMU TCG; docs/guests.md) and runs one plan whose two
variants differ only in the target: a null_blk device (mq, irqmode none) and a loop image in
the guest's RAM, each with fio 4k random reads, direct, psync, one job, raw device.  The
blocks are randomized as in any iolab run.  Prints each variant's samples, mean and CV
(standard deviation / mean) of read IOPS.  TCG figures: compare the CVs, not the IOPS.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from guest_fixtures import KERNEL_A, guest_image
from iolab.guest import run

PLAN = """\
name: nullblk-cv
filesystem: none
workload:
  fio: |
    [randread]
    filename={{dev}}
    rw=randread
    bs=4k
    direct=1
    ioengine=psync
    size=256M
    runtime={runtime}
    time_based=1
variants:
  null_blk:
    target: {{kind: null_blk, size: 256M, queue_mode: mq, irqmode: none}}
  loop:
    target: {{kind: loop, size: 256M, backing: ram}}
repeat: {repeat}
kpis: [read.iops]
"""

SCRIPT = """\
iolab --db /root/cv.db run /run/iolab-cmd/plan.yaml >/root/run.out 2>&1 || {
  cat /root/run.out; exit 1; }
iolab --db /root/cv.db results --run 1 --json >/root/r.json
echo "RESULTS $(python3 -c 'import json; print(json.dumps([[s["variant"], s["status"],
  s["metrics"].get("read.iops")] for s in json.load(open("/root/r.json"))]))')"
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--runtime", default="2s")
    parser.add_argument("--memory", type=int, default=1536)
    args = parser.parse_args()
    plan = PLAN.format(runtime=args.runtime, repeat=args.repeat)
    result = run.run_script(
        guest_image(),
        KERNEL_A,
        textwrap.dedent(SCRIPT),
        files={"plan.yaml": plan.encode()},
        timeout_s=3600,
        memory_mib=args.memory,
    )
    out = result.boots[-1].output
    if result.exit_status != 0:
        sys.exit(f"guest run failed ({result.exit_status}):\n{out}")
    line = next(x for x in out.splitlines() if x.startswith("RESULTS "))
    rows = json.loads(line[len("RESULTS ") :])
    print(f"kernel {KERNEL_A}, {args.repeat} blocks, fio runtime {args.runtime} (QEMU TCG)")
    for variant in ("null_blk", "loop"):
        values = [float(v) for name, status, v in rows if name == variant and status == "ok"]
        mean = statistics.fmean(values)
        cv = statistics.stdev(values) / mean if len(values) > 1 else float("nan")
        shown = ", ".join(f"{v:.0f}" for v in values)
        print(f"{variant:9s} n={len(values)} mean {mean:,.0f} IOPS  CV {cv:.2%}  [{shown}]")


if __name__ == "__main__":
    main()
