"""What each monitor costs the KPI: interleaved A/B runs of a short fsync-heavy fio job.

A = no monitor, B = one monitor started just before fio and stopped just after, as the lab
does.  Each pair runs A and B in a random order on the same ext4 loop image in /dev/shm, so
drift of the machine falls on both sides.  Reported per monitor: the ratio of the median KPI
with the monitor to the median without (1.00 = no effect; < 1 = the monitor slows the job),
a 95% bootstrap interval of that ratio (pairs resampled), and the CV of the A runs, which says
how noisy the machine was.  "iolab CPU ms/s" is the CPU time iolab's own process (its
monitor threads) used per second of workload, over the runs without: a noise-free view of
the Python side's cost (bpftrace's in-kernel work is charged to the traced tasks and does not
show there).  The monitor's start time (bpftrace compiles and attaches before
the workload) is reported separately: it costs wall time, not KPI.

    sudo .venv/bin/python bench/monitor_overhead.py --pairs 10 --write-docs

Needs root (loop device, mount, tracing).  Leaves nothing behind: the image is unmounted,
detached and deleted in `finally`; monitors undo their own changes.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from iolab.ingest.detect import parse_text
from iolab.monitors import registry
from iolab.monitors.base import MonitorContext

DOC = Path(__file__).resolve().parent.parent / "docs" / "monitors.md"
BEGIN, END = "<!-- overhead:begin -->", "<!-- overhead:end -->"
DEFAULT_MONITORS = [
    "jbd2",
    "diskstats",
    "vmstat",
    "cpu_sys",
    "hist@bpftrace",
    "hist@tracefs",
    "jbd2+diskstats+vmstat+cpu_sys+hist",  # what an example plan turns on
]


class Journal:
    """The bench's journal: monitors undo their own changes; this only checks they did."""

    def __init__(self) -> None:
        self.open: set[int] = set()
        self.n = 0

    def record(self, kind: str, **undo: str) -> int:
        self.n += 1
        self.open.add(self.n)
        return self.n

    def undone(self, entry_id: int) -> None:
        self.open.discard(entry_id)


def run(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


@contextmanager
def ext4_image(size: str) -> Iterator[tuple[str, Path]]:
    base = Path(f"/dev/shm/iolab-monbench-{os.getpid()}")
    image, mnt = base / "img", base / "mnt"
    base.mkdir()
    try:
        mnt.mkdir()
        run("truncate", "-s", size, str(image))
        run("mkfs.ext4", "-q", "-F", "-m", "1", "-b", "4096", str(image))
        loop = run("losetup", "-f", "--show", str(image))
        run("mount", "-o", "noatime,nodiratime,data=ordered", loop, str(mnt))
        yield os.path.basename(loop), mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True, check=False)
        for dev in run("losetup", "-j", str(image), "-O", "NAME", "-n").split():
            subprocess.run(["losetup", "-d", dev], capture_output=True, check=False)
        shutil.rmtree(base, ignore_errors=True)


def fio_argv(mnt: Path, args: argparse.Namespace) -> list[str]:
    return [
        "fio", "--name=overhead", f"--directory={mnt}", "--rw=randwrite", "--bs=16k",
        "--ioengine=psync", "--size=1m", "--fsync=1", f"--numjobs={args.numjobs}",
        "--group_reporting", f"--runtime={args.runtime}", "--time_based",
        "--output-format=json",
    ]  # fmt: skip


@dataclass
class Series:
    a: list[float] = field(default_factory=list)
    b: list[float] = field(default_factory=list)
    start_s: list[float] = field(default_factory=list)
    cpu_a: list[float] = field(default_factory=list)  # this process's CPU s per s of run
    cpu_b: list[float] = field(default_factory=list)
    warnings: set[str] = field(default_factory=set)


def one_run(argv: list[str], ctx: MonitorContext, monitor: str | None, s: Series) -> float:
    monitors = registry.create(monitor.split("+")) if monitor else []
    for m in monitors:
        why = m.unavailable(ctx)
        if why:
            raise SystemExit(f"monitor {m.name}: {why}")
    started = []
    try:
        t0 = time.monotonic()
        for m in monitors:
            m.start(ctx)
            started.append(m)
        if monitors:
            s.start_s.append(time.monotonic() - t0)
        cpu0, wall0 = time.process_time(), time.monotonic()
        out = run(*argv)
        cpu = (time.process_time() - cpu0) / (time.monotonic() - wall0)
    finally:
        for m in reversed(started):
            s.warnings.update(f"{m.name}: {w}" for w in m.stop(ctx).warnings)
    (s.cpu_b if monitor else s.cpu_a).append(cpu)
    return parse_text(out, "fio")[0].metrics["write.iops"]


def ratio_interval(a: list[float], b: list[float], rng: np.random.Generator) -> tuple[float, float]:
    """95% bootstrap interval of median(b)/median(a), resampling pairs."""
    aa, bb = np.array(a), np.array(b)
    idx = rng.integers(0, len(aa), size=(4000, len(aa)))
    ratios = np.median(bb[idx], axis=1) / np.median(aa[idx], axis=1)
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return float(lo), float(hi)


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--runtime", type=float, default=1.0, help="fio runtime per run, seconds")
    ap.add_argument("--numjobs", type=int, default=4)
    ap.add_argument(
        "--monitors", nargs="+", default=DEFAULT_MONITORS, help="names; a+b runs several at once"
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--write-docs", action="store_true", help=f"write the table into {DOC}")
    args = ap.parse_args()
    for spec in args.monitors:  # unknown names fail before anything is set up
        registry.create(spec.split("+"))
    rng = random.Random(args.seed)
    series = {m: Series() for m in args.monitors}
    load_before = loadavg()
    started = time.time()
    journal = Journal()
    with ext4_image("256M") as (dev, mnt):
        work = mnt.parent / "work"
        work.mkdir()
        ctx = MonitorContext([dev], mnt, "ext4", journal, work)
        argv = fio_argv(mnt, args)
        run(*argv)  # lay out the files and warm up once
        # the pairs of all monitors are interleaved too: round r runs one pair of each
        for r in range(args.pairs):
            order = list(args.monitors)
            rng.shuffle(order)
            for monitor in order:
                s = series[monitor]
                sides = [None, monitor]
                rng.shuffle(sides)
                for side in sides:
                    iops = one_run(argv, ctx, side, s)
                    print(f"  {side or 'none':14} {iops:9.0f}", file=sys.stderr)
                    (s.b if side else s.a).append(iops)
            print(f"round {r + 1}/{args.pairs} done, load {loadavg()}", file=sys.stderr)
    if journal.open:
        print(f"monitors left {len(journal.open)} journal entries open", file=sys.stderr)
        return 1
    nprng = np.random.default_rng(args.seed)
    rows = []
    all_a = [v for s in series.values() for v in s.a]
    for monitor, s in series.items():
        ratio = statistics.median(s.b) / statistics.median(s.a)
        lo, hi = ratio_interval(s.a, s.b, nprng)
        cv = statistics.stdev(s.a) / statistics.mean(s.a) * 100
        start = statistics.median(s.start_s) if s.start_s else 0.0
        cpu_ms = (statistics.median(s.cpu_b) - statistics.median(s.cpu_a)) * 1000
        rows.append(
            f"| {monitor} | {statistics.median(s.a):.0f} | {statistics.median(s.b):.0f} | "
            f"{ratio:.3f} | {lo:.3f} – {hi:.3f} | {cv:.1f}% | {start:.2f} s | {cpu_ms:.1f} |"
        )
        for w in sorted(s.warnings):
            print(f"{monitor}: {w}", file=sys.stderr)
    overall_cv = statistics.stdev(all_a) / statistics.mean(all_a) * 100
    cmd = "sudo .venv/bin/python bench/monitor_overhead.py " + " ".join(sys.argv[1:])
    text = "\n".join(
        [
            BEGIN,
            f"Measured {time.strftime('%Y-%m-%d %H:%M', time.localtime(started))} on "
            f"{os.uname().release}, {os.cpu_count()} CPUs, with `{cmd}`: {args.pairs} "
            f"interleaved pairs per monitor, fio {args.numjobs} jobs × 16 KiB random psync "
            f"writes with fsync after each, {args.runtime:g} s per run, ext4 on a loop image "
            f"in /dev/shm.  KPI: write IOPS.",
            "",
            "| monitor | median IOPS without | median IOPS with | ratio with/without | "
            "95% interval | CV of runs without | start time | iolab CPU ms/s |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            f"Load average before {load_before}, after {loadavg()}; CV of all runs without a "
            f"monitor {overall_cv:.1f}%.",
            END,
        ]
    )
    print(text)
    if args.write_docs:
        doc = DOC.read_text()
        if BEGIN in doc and END in doc:
            head, rest = doc.split(BEGIN, 1)
            doc = head + text + rest.split(END, 1)[1]
        else:
            doc = doc.rstrip("\n") + "\n\n" + text + "\n"
        DOC.write_text(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
