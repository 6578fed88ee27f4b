"""Record the real data set the statistics validation resamples: one short fio job, >= 200 times.

Usage:  .venv/bin/python bench/record_dataset.py OUT.csv [--repeat 240] [--runtime 2s]
            [--warmup 1s] [--plan PLAN] [--variant fsync] [--db PATH]
        .venv/bin/python bench/record_dataset.py OUT.csv --export RUN --db PATH

It runs `iolab run` of example (a) reduced to one variant (default fsync) with `repeat`
blocks — so every sample gets the lab's full preparation (fresh mkfs, dropped caches, warm-up,
CPU placement as the plan says) — then exports the samples in run order.  CSV columns:
sample, block, started_utc, finished_utc, then secondary metrics, and write.iops LAST (the
statistics simulations, bench/sim_*.py, read the last positive numeric column).  Comment
lines (#) carry the command, the plan as run, and the machine's state.  Root only.
"""

from __future__ import annotations

import argparse
import csv
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from noise.labrun import one_variant_plan, run_plan, samples
from noise.machine import snapshot
from noise.series import describe

ROOT = Path(__file__).resolve().parent.parent
KPI = "write.iops"
SECONDARY = (
    "elapsed_s",
    "write.bw_bytes",
    "write.clat_ns.mean",
    "write.clat_ns.p99",
    "sync.lat_ns.mean",
    "sync.lat_ns.p99",
    "cpu.ctx",
    "proc.sys_s",
    "jbd2.handles_per_txn",
    "jbd2.transactions",
)


def export(rows: list[dict[str, Any]], out: Path, header: list[str]) -> int:
    ok = sorted((r for r in rows if r["status"] == "ok"), key=lambda r: str(r["started_at"]))
    present = [m for m in SECONDARY if any(m in r["metrics"] for r in ok)]
    with out.open("w", newline="") as f:
        for line in header:
            f.write(f"# {line}\n")
        failed = len(rows) - len(ok)
        f.write(f"# {len(ok)} ok samples in run order; {failed} failed sample(s) left out\n")
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["sample", "block", "started_utc", "finished_utc", *present, KPI])
        for n, r in enumerate(ok, 1):
            m = r["metrics"]
            w.writerow(
                [
                    n,
                    r["block"],
                    r["started_at"],
                    r["finished_at"],
                    *(_fmt(m.get(k)) for k in present),
                    _fmt(m[KPI]),
                ]
            )
    return len(ok)


def _fmt(v: float | None) -> str:
    if v is None:
        return ""
    return f"{v:.6g}" if abs(v) < 1000 else f"{v:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--repeat", type=int, default=240)
    ap.add_argument("--runtime", default="2s")
    ap.add_argument("--warmup", default="1s")
    ap.add_argument("--plan", type=Path, default=ROOT / "examples/ext4-fsync-vs-fdatasync.yaml")
    ap.add_argument("--variant", default="fsync")
    ap.add_argument("--monitors", help="comma-separated monitors instead of the plan's ('' = none)")
    ap.add_argument("--db", type=Path, help="iolab store (default: OUT with .db)")
    ap.add_argument("--export", type=int, metavar="RUN", help="only export this run")
    args = ap.parse_args()
    db = args.db or args.out.with_suffix(".db")
    command = shlex.join([".venv/bin/python", "bench/record_dataset.py", *sys.argv[1:]])
    before = snapshot()
    with tempfile.TemporaryDirectory(prefix="record-") as tmp:
        overrides: dict[str, Any] = {
            "vars": {"runtime": args.runtime},
            "prepare": {"warmup": args.warmup},
        }
        if args.monitors is not None:
            overrides["monitors"] = [n for n in args.monitors.split(",") if n]
        plan = one_variant_plan(
            args.plan,
            args.variant,
            args.repeat,
            Path(tmp),
            overrides,
        )
        plan_text = plan.read_text()
        t0 = time.time()
        run_id = args.export or run_plan(db, plan, "dataset")
        took = time.time() - t0
    after = snapshot()
    rows = samples(db, run_id)
    header = [
        f"Recorded with iolab (lab run {run_id}): {command}",
        f"took {took:.0f} s; machine before: " + "; ".join(f"{k}={v}" for k, v in before.items()),
        f"machine after: loadavg={after['loadavg']}; cpu_pressure_avg60="
        f"{after['cpu_pressure_avg60']}",
        "plan as run:",
        *("  " + line for line in plan_text.splitlines()),
    ]
    n = export(rows, args.out, header)
    values = [float(r["metrics"][KPI]) for r in rows if r["status"] == "ok"]
    s = describe(values)
    print(
        f"{args.out}: {n} samples; median {s.median:,.0f} IOPS, CV {100 * s.cv:.1f}%, "
        f"robust CV {100 * s.robust_cv:.1f}%, range {s.lo:,.0f}–{s.hi:,.0f}, lag-1 {s.lag1:+.2f}"
    )


if __name__ == "__main__":
    main()
