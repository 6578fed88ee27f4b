"""How long `iolab publish` takes for a store of many runs, and how fast its index loads in
headless Chromium.

Usage:  .venv/bin/python bench/publish_site.py SOURCE.db [SOURCE2.db ...] [--runs 200]
                                               [--loads 5] [--keep DIR]

The store is built from real runs: the runs of the SOURCE stores (e.g. a quick lab run and
an ab run of examples/ext4-fsync-vs-fdatasync.yaml) are copied, sample by sample (result-level
metrics and histograms: what the pages read), round-robin until the store holds --runs runs.
Then, each as a subprocess of the real CLI:
1. `iolab publish` into an empty directory (every run page rendered);
2. `iolab publish` again (nothing changed: every page kept);
3. the index opened from file:// in Chromium --loads times; the time to the load event
   (navigation start → loadEventEnd, the browser's own timing) and the wall time of the
   whole navigation are reported, median and max.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from browser import chromium, url
from iolab.store import open_store


def build(sources: list[str], target: str, runs: int) -> dict[str, int]:
    """Copy the sources' runs round-robin into `target` until it holds `runs` runs."""
    pool = []
    for source in sources:
        with open_store(source, must_exist=True) as store:
            for info in store.runs():
                samples = store.samples(run_id=info.id, status=None, with_jobs=False)
                pool.append((info, samples))
    kinds: dict[str, int] = {}
    with open_store(target) as store:
        for i in range(runs):
            info, samples = pool[i % len(pool)]
            run_id = store.create_run(
                info.kind,
                label=f"{info.label or info.kind} #{i + 1}",
                tags={"copy": str(i + 1)},
                plan_path=info.plan_path,
                plan_text=info.plan_text,
                plan_hash=info.plan_hash,
                host=info.host,
                meta=info.meta,
            )
            for sample in samples:
                sample.run_id = run_id
                sample.id = None
                store.add_sample(sample)
            store.finish_run(run_id, info.status)
            kinds[info.kind] = kinds.get(info.kind, 0) + 1
            if (i + 1) % 50 == 0:
                print(f"  {i + 1} runs copied", flush=True)
    return kinds


def timed(args: list[str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system of the command and its workers), output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sources", nargs="+")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--keep", default=None, help="publish here and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="iolab-bench-", dir="/dev/shm") as tmp:
        db = str(Path(tmp) / "store.db")
        started = time.monotonic()
        kinds = build(args.sources, db, args.runs)
        samples = 0
        with open_store(db) as store:
            samples = sum(r.n_samples for r in store.runs())
        print(
            f"store: {args.runs} runs ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}), "
            f"{samples} samples, built in {time.monotonic() - started:.1f} s"
        )
        site = Path(args.keep) if args.keep else Path(tmp) / "site"
        cli = [sys.executable, "-m", "iolab", "--db", db, "publish", str(site)]
        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} before")
        wall, cpu, out = timed(cli)
        print(f"publish (empty directory): {wall:.1f} s wall, {cpu:.1f} s CPU — {out}")
        wall, cpu, out = timed(cli)
        print(f"publish again (unchanged): {wall:.1f} s wall, {cpu:.1f} s CPU — {out}")
        print(f"load average after: {os.getloadavg()[0]:.1f}")
        index = site / "index.html"
        size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
        print(f"site: {size / 1e6:.1f} MB; index.html {index.stat().st_size / 1e3:.0f} kB")
        loads, walls = [], []
        with chromium() as browser:
            for _ in range(args.loads):
                t0 = time.monotonic()
                with browser.visit(url(index)) as visit:
                    walls.append(time.monotonic() - t0)
                    loads.append(
                        visit.page.evaluate(
                            "performance.getEntriesByType('navigation')[0].loadEventEnd"
                        )
                        / 1000.0
                    )
                    visit.assert_clean()
        print(
            f"index load in Chromium ({args.loads} loads): load event after "
            f"median {statistics.median(loads):.3f} s, max {max(loads):.3f} s; "
            f"navigation wall time median {statistics.median(walls):.3f} s, "
            f"max {max(walls):.3f} s"
        )


if __name__ == "__main__":
    main()
