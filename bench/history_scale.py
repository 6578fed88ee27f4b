"""`iolab history` over 1,000 runs: how long the command takes (docs/history.md).

Usage:  .venv/bin/python bench/history_scale.py [--runs 1000] [--samples 5] [--repeat 3]

Builds a throw-away SQLite store of `--runs` lab runs (kind "lab", one case, `--samples`
samples each, each sample with the metrics a fio lab sample carries: write.iops,
write.bw_bytes, write.clat_ns.mean, write.clat_ns.p99), drawn from the recorded
bench/data/ext4-fsync-16k-lab-quiet.csv with a -8% step at run 700.  Then it runs the real
command `python -m iolab --db STORE history label:scale` as a subprocess `--repeat` times
and prints each wall-clock and CPU time (process start and imports included), the load
average (the machine is shared: wall time grows with it), and the change points found.
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from iolab.model.sample import Sample
from iolab.store import open_store

DATA = Path(__file__).with_name("data") / "ext4-fsync-16k-lab-quiet.csv"
METRICS = ("write.iops", "write.bw_bytes", "write.clat_ns.mean", "write.clat_ns.p99")


def build(db: Path, runs: int, samples: int, seed: int) -> None:
    with DATA.open() as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    rng = np.random.default_rng(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with open_store(str(db)) as store:
        for r in range(runs):
            run_id = store.create_run(
                "lab",
                label="scale",
                host="bench",
                plan_path="scale.yaml",
                meta={"kpis": ["write.iops"]},
                tags={"kernel": f"6.{r // 100}.{r % 100}"},
            )
            factor = 0.92 if r >= 700 else 1.0
            for b in range(samples):
                row = rows[int(rng.integers(len(rows)))]
                at = start + timedelta(hours=r, minutes=b)
                metrics = {
                    m: float(row[m]) * (factor if m.endswith(("iops", "bw_bytes")) else 1.0)
                    for m in METRICS
                }
                store.add_sample(
                    Sample(
                        run_id=run_id,
                        variant="fsync",
                        cell={"writers": 16},
                        block=b,
                        metrics=metrics,
                        started_at=at,
                        finished_at=at + timedelta(seconds=2),
                    )
                )
            store.finish_run(run_id)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "scale.db"
        t0 = time.perf_counter()
        build(db, args.runs, args.samples, args.seed)
        print(
            f"store: {args.runs} runs x {args.samples} samples in {time.perf_counter() - t0:.0f} s"
        )
        for _ in range(args.repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "iolab",
                    "--db",
                    str(db),
                    "history",
                    "label:scale",
                    "--format",
                    "json",
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            took = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            load = Path("/proc/loadavg").read_text().split()[0]
            body = json.loads(done.stdout)
            found = [
                (s["metric"], len(s["points"]), [cp["index"] for cp in s["change_points"]])
                for s in body["series"]
            ]
            print(
                f"history: {took:.2f} s wall, {cpu:.2f} s CPU (load average {load}); "
                f"series (metric, points, change points): {found}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
