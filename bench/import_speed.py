"""Import of many fio JSON files against a floor: json.loads + inserting the same rows into
SQLite with iolab's schema, measured in one session (issue 13: ≤ 1.3× the floor).

The files are copies of real fio 3.33 JSON outputs of this repository (tests/data/fio-3.33/out,
tests/data/fio-repeats/out), cycled to N files in a temporary directory.  Three timings:

- floor: read + `json.loads` every file, then insert the rows iolab stores for them (one run,
  one sample per result, its metrics and histogram bins — computed beforehand with iolab's own
  parser, outside the timing) with sqlite3 `executemany` in one transaction into a database
  created with iolab's schema.  Nothing can import faster than this without skipping work.
- iolab: `iolab import --label bench FILE…` as a user runs it (a new process: its start-up
  and imports are included), into an empty store created beforehand, as the floor's is.
- ratio = iolab / floor, per round (floor and iolab alternate, so load from elsewhere falls
  on both), in wall time and in CPU time (user + system: robust against a busy machine);
  the medians over the rounds are reported, with the load average before and after (iolab
  parses in a second process while it stores: another busy process on a 2-core machine
  slows it more than the single-process floor).

    .venv/bin/python bench/import_speed.py --files 10000 --rounds 3
    .venv/bin/python bench/import_speed.py --iolab-src /path/to/old/checkout/src   # before

Leaves nothing behind (the temporary directory is removed).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from iolab.errors import IolabError
from iolab.ingest.detect import parse_source
from iolab.model.result import Result
from iolab.store import convert, open_store

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(
    [
        *(ROOT / "tests" / "data" / "fio-3.33" / "out").glob("*.json"),
        *(ROOT / "tests" / "data" / "fio-repeats" / "out").glob("*.json"),
    ]
)


def make_files(directory: Path, count: int) -> list[Path]:
    usable = []
    for src in SOURCES:
        try:
            parse_source(str(src))
        except IolabError:  # an error fixture (fio reported an error)
            continue
        usable.append(src)
    files = []
    for i, src in zip(range(count), itertools.cycle(usable), strict=False):
        dst = directory / f"{i:05d}.json"
        shutil.copyfile(src, dst)
        files.append(dst)
    return files


# named, not positional: a migration that adds a column (0002: case_key) appends it
SAMPLE_COLUMNS = (
    "id",
    "run_id",
    "variant",
    "cell",
    "cell_key",
    "case_key",
    "block",
    "position",
    "status",
    "reason",
    "tool",
    "tool_version",
    "format",
    "source",
    "caption",
    "started_at",
    "finished_at",
    "provenance",
    "jobs",
)
Rows = tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]


def rows_for(results: list[Result]) -> Rows:
    """The sample, metric and histogram rows iolab stores for `results` (ids from 1)."""
    samples: list[tuple[Any, ...]] = []
    metrics: list[tuple[Any, ...]] = []
    bins: list[tuple[Any, ...]] = []
    for sample_id, result in enumerate(results, start=1):
        sample = convert.sample_from_result(result, 1)
        head = (sample_id, 1, None, "{}", "", sample.case_key, None, None, "ok", None)
        tail = (sample.tool, sample.tool_version, sample.format, sample.source, sample.caption)
        jsons = (json.dumps(sample.provenance), json.dumps(list(sample.job_metrics)))
        samples.append((*head, *tail, None, None, *jsons))
        metrics.extend(convert.metric_tuples(sample_id, sample))
        bins.extend(convert.histogram_tuples(sample_id, sample))
    return samples, metrics, bins


def floor_once(files: list[Path], db: Path, rows: Rows) -> tuple[float, float]:
    """(wall s, CPU s) of the floor."""
    samples, metrics, bins = rows
    start, cpu = time.perf_counter(), time.process_time()
    for path in files:
        json.loads(path.read_bytes())
    con = sqlite3.connect(db)
    con.execute("PRAGMA foreign_keys=ON")
    with con:
        con.execute(
            "INSERT INTO runs (id, kind, label, status, created_at, meta) "
            "VALUES (1, 'import', 'bench', 'running', '2026-01-01', '{}')"
        )
        con.executemany(
            f"INSERT INTO samples ({', '.join(SAMPLE_COLUMNS)}) "
            f"VALUES ({', '.join('?' * len(SAMPLE_COLUMNS))})",
            samples,
        )
        con.executemany("INSERT INTO metrics VALUES (?, ?, ?, ?)", metrics)
        con.executemany("INSERT INTO histograms VALUES (?, ?, ?, ?, ?)", bins)
        con.execute("UPDATE runs SET status = 'finished' WHERE id = 1")
    con.close()
    return time.perf_counter() - start, time.process_time() - cpu


def fresh_store(path: Path) -> None:
    path.unlink(missing_ok=True)
    store = open_store(str(path))
    store.close()


def iolab_once(files: list[Path], db: Path, src: str | None) -> tuple[float, float]:
    """(wall s, CPU s of the child) of `iolab import` (of the iolab in `src`, if given)."""
    iolab = str(Path(sys.executable).parent / "iolab")
    env = {**os.environ, "PYTHONPATH": src} if src else None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [iolab, "--db", str(db), "import", "--label", "bench", *map(str, files)],
        check=True,
        stdout=subprocess.DEVNULL,
        env=env,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--iolab-src",
        default=None,
        metavar="DIR",
        help="time the iolab of another checkout's src/ (e.g. before a change)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="iolab-import-bench.") as tmp:
        work = Path(tmp)
        (work / "in").mkdir()
        files = make_files(work / "in", args.files)
        results = [r for f in files for r in parse_source(str(f))]
        rows = rows_for(results)
        print(
            f"{len(files)} files, {len(results)} results, {len(rows[1])} metric rows, "
            f"{len(rows[2])} histogram rows"
        )
        print(f"load average before: {_load()}")
        wall_ratios, cpu_ratios = [], []
        for _ in range(args.rounds):
            db = work / "floor.db"
            fresh_store(db)
            floor_wall, floor_cpu = floor_once(files, db, rows)
            db = work / "iolab.db"
            fresh_store(db)  # like the floor's: an empty store with iolab's schema
            ours_wall, ours_cpu = iolab_once(files, db, args.iolab_src)
            wall_ratios.append(ours_wall / floor_wall)
            cpu_ratios.append(ours_cpu / floor_cpu)
            print(
                f"  floor {floor_wall:.2f} s wall {floor_cpu:.2f} s CPU   "
                f"iolab import {ours_wall:.2f} s wall {ours_cpu:.2f} s CPU   "
                f"ratio {wall_ratios[-1]:.2f} wall {cpu_ratios[-1]:.2f} CPU"
            )
        print(
            f"median ratio iolab/floor over {args.rounds} rounds: "
            f"{statistics.median(wall_ratios):.2f} wall, {statistics.median(cpu_ratios):.2f} CPU"
        )
        print(f"load average after: {_load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
