"""Run-to-run noise of example (a): a naive shell-style loop against the lab, in one session.

Usage:  .venv/bin/python bench/noise_cv.py [--samples 30] [--plan PLAN] [--variant fsync]
            [--naive-runtime 2s] [--csv OUT.csv] [--out OUT.md] [--db PATH]

Naive: example (a)'s fio job, run again and again on ONE tmpfs-backed ext4 loop image (mkfs
-m 1 -b 4096, mount noatime,nodiratime,data=ordered), no fresh filesystem, no dropped caches,
no warm-up, no CPU placement — what a `for i in ...; do fio job; done` loop does.
Lab: `iolab run` of the plan reduced to one variant and one block, i.e. exactly the plan's own
preparation (fresh mkfs, drop caches, warm-up, cpus) for one sample.

The two alternate — each round runs one naive and one lab sample, in a coin-flip order — so
the load other users put on the machine, and its drift, hit both sides alike.  Reported per
side: median, CV, robust CV (1.4826·MAD/median), range and lag-1 autocorrelation; plus the
machine's state before and after.  Root only; every loop device it makes is its own.
"""

from __future__ import annotations

import argparse
import csv
import math
import random
import shlex
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from noise.fsloop import ext4_loop, job_a, run_fio
from noise.labrun import one_variant_plan, run_plan, samples
from noise.machine import snapshot
from noise.series import HEADER, describe, row

ROOT = Path(__file__).resolve().parent.parent


def _names(text: str) -> list[str]:
    return [n for n in text.split(",") if n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--plan", type=Path, default=ROOT / "examples/ext4-fsync-vs-fdatasync.yaml")
    ap.add_argument("--variant", default="fsync")
    ap.add_argument("--monitors", help="comma-separated monitors instead of the plan's ('' = none)")
    ap.add_argument("--naive-runtime", default="2s")
    ap.add_argument("--csv", type=Path, help="write every sample here (run order)")
    ap.add_argument("--out", type=Path, help="write the markdown summary here")
    ap.add_argument("--db", type=Path, help="iolab store (default: a temporary file)")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    command = shlex.join([".venv/bin/python", "bench/noise_cv.py", *sys.argv[1:]])
    before = snapshot()
    rng = random.Random(args.seed)
    rows: list[dict[str, object]] = []
    label = f"noise-cv-{int(time.time())}"
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="noise-cv-") as tmp:
        db = args.db or Path(tmp) / "noise.db"
        overrides = {} if args.monitors is None else {"monitors": _names(args.monitors)}
        plan = one_variant_plan(args.plan, args.variant, 1, Path(tmp), overrides)
        with ext4_loop("naive") as fs:
            for i in range(args.samples):
                sides = ["naive", "lab"]
                rng.shuffle(sides)
                for pos, side in enumerate(sides):
                    started = time.time()
                    if side == "naive":
                        s = run_fio(job_a(fs.mnt, args.naive_runtime))
                        value, run_id = s.iops, ""
                    else:
                        rid = run_plan(db, plan, label)
                        got = samples(db, rid)
                        run_id = str(rid)
                        if len(got) != 1 or got[0]["status"] != "ok":
                            # a failed sample is data about the lab, never a number
                            why = [x.get("reason") for x in got]
                            print(f"lab run {rid} failed: {why}", file=sys.stderr)
                            value = float("nan")
                        else:
                            value = float(got[0]["metrics"]["write.iops"])
                    rows.append(
                        {
                            "round": i + 1,
                            "position": pos + 1,
                            "side": side,
                            "started_utc": datetime.fromtimestamp(started, UTC).isoformat(),
                            "lab_run": run_id,
                            "write_iops": round(value, 1),
                        }
                    )
                print(f"round {i + 1}/{args.samples} ({time.time() - t0:.0f} s)", file=sys.stderr)
    after = snapshot()

    if args.csv:
        with args.csv.open("w", newline="") as f:
            f.write(f"# {command}\n")
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)

    def values(side: str) -> list[float]:
        got = [float(str(r["write_iops"])) for r in rows if r["side"] == side]
        return [v for v in got if not math.isnan(v)]

    naive, lab = describe(values("naive")), describe(values("lab"))
    failed = sum(1 for r in rows if r["side"] == "lab") - lab.n
    lines = [
        f"Command: `{command}` ({time.time() - t0:.0f} s, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        f"Plan: {args.plan.relative_to(ROOT) if args.plan.is_relative_to(ROOT) else args.plan}"
        f", variant {args.variant}; naive runtime {args.naive_runtime}",
        "",
        HEADER,
        row("naive loop (one fs, no preparation)", naive),
        row("lab (`iolab run`)", lab),
        "",
        f"Failed lab samples (left out): {failed}",
        "",
        "Machine before: " + "; ".join(f"{k}={v}" for k, v in before.items()),
        "",
        "Machine after: "
        + "; ".join(
            f"{k}={v}"
            for k, v in after.items()
            if k not in ("host", "kernel", "cpu", "cpus", "memory", "fio")
        ),
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
