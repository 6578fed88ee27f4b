"""Start-up time of the commands people run dozens of times an hour, against an empty Python.

Usage:  .venv/bin/python bench/startup.py [--runs 30]

Times, as whole processes in one session and interleaved round by round (so that a busy
moment of the machine hits every command alike):
  python3 -c pass          the floor: an interpreter that does nothing
  iolab --help
  iolab parse FILE         a recorded fio JSON result (tests/data)
  iolab results            on an empty store (created, and migrated, before timing)
and prints each one's median, minimum and maximum wall time and its median's ratio to the
floor.  The targets (issue 9): --help and parse ≤ 15×, results ≤ 25×.

For reference, not targets: `results` on a store of 200 imported runs, `results --run ID`
(a run of one sample per usable fixture), and the same two read through SQLAlchemy (the
store named by a `sqlite:///` URL, which is how a URL store such as PostgreSQL is read)
beside `import sqlalchemy` alone — what listing cost before a current SQLite file was read with
the standard library (iolab.store.sqlite_reader).  The last measurement is in
docs/architecture.md ("Start-up").
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
FIXTURES = sorted((ROOT / "tests" / "data" / "fio-3.33" / "out").glob("*.json"))
TARGETS = {"iolab --help": 15.0, "iolab parse FILE": 15.0, "iolab results": 25.0}


def iolab_command() -> list[str]:
    """The installed console script next to this interpreter (what a user runs)."""
    script = Path(sys.executable).with_name("iolab")
    return [str(script)] if script.exists() else [sys.executable, "-m", "iolab"]


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run; CPU (user + system, from the kernel's accounting of
    the finished child) is what the command itself cost, which a busy machine inflates less
    than the wall time."""
    began = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - began
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit status {child.returncode}")
    return elapsed, usage.ru_utime + usage.ru_stime


def populate(db: Path) -> tuple[str, int]:
    """200 imported runs: 199 of one result each, then one of every usable fixture; that
    last run's id and its number of samples."""
    from iolab.errors import IolabError
    from iolab.ingest.detect import parse_source
    from iolab.store import open_store

    results = []
    for path in FIXTURES:
        try:
            results.extend(parse_source(str(path)))
        except IolabError:  # an error fixture (fio reported an error)
            continue
    with open_store(str(db)) as store:
        for n in range(199):
            store.import_results(results[n % len(results) : n % len(results) + 1], f"r{n}")
        return str(store.import_results(results, "all")), len(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="iolab-startup-") as tmp:
        env = dict(os.environ, IOLAB_DB=str(Path(tmp) / "empty.db"), NO_COLOR="1")
        iolab = iolab_command()
        from iolab.store import open_store

        open_store(env["IOLAB_DB"]).close()  # the empty store, at the newest schema revision
        full = Path(tmp) / "full.db"
        big_run, n_samples = populate(full)
        url = f"sqlite:///{full}"
        commands = {
            "python3 -c pass": [sys.executable, "-c", "pass"],
            "iolab --help": [*iolab, "--help"],
            "iolab parse FILE": [*iolab, "parse", str(FIXTURE)],
            "iolab results": [*iolab, "results"],
            # reference, not targets
            "results, 200 runs": [*iolab, "--db", str(full), "results"],
            f"results --run ({n_samples})": [
                *iolab,
                "--db",
                str(full),
                "results",
                "--run",
                big_run,
            ],
            "  same, SQLAlchemy": [*iolab, "--db", url, "results", "--run", big_run],
            "  200 runs, SQLAlchemy": [*iolab, "--db", url, "results"],
            "import sqlalchemy": [sys.executable, "-c", "import sqlalchemy"],
        }
        for argv in commands.values():  # warm the page cache and the bytecode caches
            timed(argv, env)
        walls: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, argv in commands.items():
                wall, cpu = timed(argv, env)
                walls[name].append(wall)
                cpus[name].append(cpu)
    floor = statistics.median(walls["python3 -c pass"])
    cpu_floor = statistics.median(cpus["python3 -c pass"])
    print(f"{args.runs} interleaved runs each, {sys.executable}, load {os.getloadavg()[0]:.1f}")
    print(
        f"{'command':<22} {'wall median':>11} {'min':>8} {'max':>8} {'ratio':>6}"
        f" {'CPU median':>10} {'ratio':>6}  target (wall ratio)"
    )
    for name, values in walls.items():
        median = statistics.median(values)
        cpu = statistics.median(cpus[name])
        target = TARGETS.get(name)
        verdict = ""
        if target is not None:
            verdict = f"≤ {target:g}×: {'met' if median / floor <= target else 'MISSED'}"
        print(
            f"{name:<22} {median * 1000:>9.1f}ms {min(values) * 1000:>6.1f}ms "
            f"{max(values) * 1000:>6.1f}ms {median / floor:>5.1f}× {cpu * 1000:>8.1f}ms"
            f" {cpu / cpu_floor:>5.1f}×  {verdict}"
        )


if __name__ == "__main__":
    main()
