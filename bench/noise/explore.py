"""Which preparation lowers the run-to-run CV of example (a)'s fsync job?  Measured, interleaved.

Usage:  .venv/bin/python bench/noise/explore.py [--rounds N] [--only a,b,...] [--out FILE.md]

Every strategy gets its own tmpfs-backed ext4 loop image.  Each round runs every strategy
once, in a fresh random order (randomized complete blocks), so the load other people put on
this shared machine, and its drift, fall on all strategies alike.  Root only.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from noise.fsloop import LoopFs, drop_caches, ext4_loop, job_a, run_fio
from noise.series import HEADER, describe, round_adjusted_sd, row


@dataclass(frozen=True)
class Strategy:
    name: str
    fresh: bool = False  # mkfs + mount before each sample
    drop: bool = False  # sync + drop caches before each sample
    runtime: str = "2s"
    ramp: str = ""  # fio ramp_time (not measured)
    cpus: str | None = None  # taskset -c
    thread: bool = True
    warmup: str = ""  # a separate, unmeasured fio run of the same job first
    extra: str = ""  # more fio options
    mkfs: tuple[str, ...] = ()  # more mkfs.ext4 options for `fresh`
    nice: int = 0  # scheduling niceness of fio (negative: ahead of other users' work)

    def sample(self, fs: LoopFs) -> float:
        if self.fresh:
            fs.remkfs(self.mkfs)
        if self.drop:
            drop_caches()
        extra = self.extra + (f"ramp_time={self.ramp}\n" if self.ramp else "")
        if self.warmup:
            run_fio(job_a(fs.mnt, self.warmup, self.thread, extra), self.cpus, self.nice)
        job = job_a(fs.mnt, self.runtime, self.thread, extra)
        return run_fio(job, self.cpus, self.nice).iops


# Initialise inode tables and journal in mkfs, not lazily by ext4lazyinit after the mount.
NOLAZY = ("-E", "lazy_itable_init=0,lazy_journal_init=0")

STRATEGIES = [
    Strategy("naive"),
    Strategy("fresh", fresh=True),
    Strategy("drop", drop=True),
    Strategy("ramp1s", ramp="1s"),
    Strategy("rt5s", runtime="5s"),
    Strategy("cpu1", cpus="1"),
    Strategy("procs", thread=False),
    Strategy("fresh+drop+warm2s+rt5s", fresh=True, drop=True, warmup="2s", runtime="5s"),
    Strategy("lab-like+cpu1", fresh=True, drop=True, warmup="2s", runtime="5s", cpus="1"),
    Strategy("fresh+rt5s", fresh=True, runtime="5s"),
    Strategy("ramp1s+rt5s", ramp="1s", runtime="5s"),
    Strategy("fresh+ramp1s+rt5s", fresh=True, ramp="1s", runtime="5s"),
    Strategy("fresh+nolazy", fresh=True, mkfs=NOLAZY),
    Strategy("lab-like+nolazy", fresh=True, drop=True, warmup="2s", runtime="5s", mkfs=NOLAZY),
    Strategy("nice-20", nice=-20),
    Strategy("nice-20+rt5s", nice=-20, runtime="5s"),
    Strategy("lab-like+nice-20", fresh=True, drop=True, warmup="2s", runtime="5s", nice=-20),
    Strategy(
        "lab-like+cpu1+nice-20",
        fresh=True,
        drop=True,
        warmup="2s",
        runtime="5s",
        cpus="1",
        nice=-20,
    ),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--only", default="")
    ap.add_argument("--out", default="")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    chosen = [s for s in STRATEGIES if not args.only or s.name in args.only.split(",")]
    values: dict[str, list[float]] = {s.name: [] for s in chosen}
    t0 = time.time()
    with ExitStack() as stack:
        fss = {s.name: stack.enter_context(ext4_loop(f"x{i}")) for i, s in enumerate(chosen)}
        rng = random.Random(args.seed)
        try:
            for r in range(args.rounds):
                order = list(chosen)
                rng.shuffle(order)
                for s in order:
                    values[s.name].append(s.sample(fss[s.name]))
                done = time.time() - t0
                print(f"round {r + 1}/{args.rounds} done ({done:.0f} s)", file=sys.stderr)
        except Exception as exc:  # report the rounds that finished
            print(f"stopped early: {exc}", file=sys.stderr)
            n = min(len(v) for v in values.values())
            values = {k: v[:n] for k, v in values.items()}
    lines = [HEADER] + [row(s.name, describe(values[s.name])) for s in chosen]
    adjusted = round_adjusted_sd(values)
    lines += ["", "SD of log IOPS after removing the per-round effect shared by all series:"]
    lines += [f"- {name}: {100 * sd:.1f}%" for name, sd in adjusted.items()]
    text = "\n".join(lines)
    print(text)
    for s in chosen:
        print(s.name, " ".join(f"{v:.0f}" for v in values[s.name]))
    if args.out:
        raw = "\n".join(f"{k}: {' '.join(f'{v:.0f}' for v in vs)}" for k, vs in values.items())
        Path(args.out).write_text(f"{text}\n\nraw (run order):\n{raw}\n")


if __name__ == "__main__":
    main()
