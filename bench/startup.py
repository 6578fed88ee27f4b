"""Start-up time of the commands people run dozens of times an hour, against an empty Python.

Usage:  .venv/bin/python bench/startup.py [--runs 30]

Times, as whole processes in one session and interleaved round by round (so that a busy
moment of the machine hits every command alike):
  python3 -c pass          the floor: an interpreter that does nothing
  iolab --help
  iolab parse FILE         a recorded fio JSON result (tests/data)
  iolab results            on an empty store (created, and migrated, before timing)
and prints each one's median, minimum and maximum wall time and its median's ratio to the
floor; `import sqlalchemy.orm` alone is timed too, for reference (the store is read through
SQLAlchemy's ORM, so `results` cannot start faster than that).  The targets (issue 9):
--help and parse ≤ 15×, results ≤ 25×.  The last measurement is in docs/architecture.md
("Start-up").
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "data" / "fio-3.33" / "out" / "randread-3jobs.json"
TARGETS = {"iolab --help": 15.0, "iolab parse FILE": 15.0, "iolab results": 25.0}


def iolab_command() -> list[str]:
    """The installed console script next to this interpreter (what a user runs)."""
    script = Path(sys.executable).with_name("iolab")
    return [str(script)] if script.exists() else [sys.executable, "-m", "iolab"]


def wall(argv: list[str], env: dict[str, str]) -> float:
    began = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="iolab-startup-") as tmp:
        env = dict(os.environ, IOLAB_DB=str(Path(tmp) / "empty.db"), NO_COLOR="1")
        iolab = iolab_command()
        from iolab.store import open_store

        open_store(env["IOLAB_DB"]).close()  # the empty store, at the newest schema revision
        commands = {
            "python3 -c pass": [sys.executable, "-c", "pass"],
            # reference, not a target: what the store's database library costs by itself
            "import sqlalchemy.orm": [sys.executable, "-c", "import sqlalchemy.orm"],
            "iolab --help": [*iolab, "--help"],
            "iolab parse FILE": [*iolab, "parse", str(FIXTURE)],
            "iolab results": [*iolab, "results"],
        }
        for argv in commands.values():  # warm the page cache and the bytecode caches
            wall(argv, env)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, argv in commands.items():
                times[name].append(wall(argv, env))
    floor = statistics.median(times["python3 -c pass"])
    print(f"{args.runs} interleaved runs each, {sys.executable}")
    print(f"{'command':<21} {'median':>9} {'min':>9} {'max':>9} {'ratio':>7}  target")
    for name, values in times.items():
        median = statistics.median(values)
        target = TARGETS.get(name)
        verdict = ""
        if target is not None:
            verdict = f"≤ {target:g}×: {'met' if median / floor <= target else 'MISSED'}"
        print(
            f"{name:<21} {median * 1000:>7.1f}ms {min(values) * 1000:>7.1f}ms "
            f"{max(values) * 1000:>7.1f}ms {median / floor:>6.1f}×  {verdict}"
        )


if __name__ == "__main__":
    main()
