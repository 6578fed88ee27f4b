"""`iolab compare` of 100 metrics x 50 samples per side, beside Go's benchstat and an empty Python.

Usage:  .venv/bin/python bench/compare_speed.py [--runs 20] [--iolab-src OLD/src] [--python EXE]

A store gets two import runs, labels `old` and `new`, of 50 samples each; every sample holds
the same 100 metrics (the 83 a mixed read/write fio JSON result yields, plus jbd2 and vmstat
evidence), drawn from a seeded generator: log-normal noise of 1-5%, a third of the metrics
moved by 2-8%, a quarter of them small integer counters with ties.  The same samples are
written in Go's benchmark format by `iolab export`, and then, as whole processes in one
session, interleaved round by round (a busy moment of the machine hits every command alike):

  python3 -c pass                      the floor: an interpreter that does nothing
  iolab compare label:old label:new    (unpaired: Mann-Whitney per metric, like benchstat)
  benchstat old.txt new.txt            Go's benchstat, if installed (PATH or ~/go/bin):
                                       `go install golang.org/x/perf/cmd/benchstat@latest`
  iolab compare (--iolab-src)          with --iolab-src OLD/src: the same command run from
                                       another checkout's sources (PYTHONPATH), so before and
                                       after share every minute of the machine's load
  iolab compare (--python)             with --python EXE: the same command run by another
                                       interpreter (`EXE -m iolab`), e.g. a venv made from a
                                       source-built Python beside the distribution's

The children run with bytecode caching on (PYTHONDONTWRITEBYTECODE removed from their
environment), as a user's Python does; the warm-up round writes the cache.

Prints each one's median, minimum and maximum wall time, its CPU time, and the ratios of its
medians (wall and CPU) to the floor's and of its wall time to benchstat's.  The figure that
counts is the whole process, what a user waits for.  The target: `iolab compare` <= 0.30 s
wall.  On a machine other jobs load, compare the ratios, not the seconds.  The last
measurement is in docs/compare.md ("Speed").
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

TARGET_S = 0.30
N_PER_SIDE = 50
FIO_METRICS = (
    *(f"cpu.{n}" for n in ("ctx", "majf", "minf", "sys_pct", "usr_pct")),
    *(
        f"disk.loop0.{n}"
        for n in (
            "in_queue",
            "read_ios",
            "read_merges",
            "read_ticks",
            "util_pct",
            "write_ios",
            "write_merges",
            "write_ticks",
        )
    ),
    *(
        f"{d}.{n}"
        for d in ("read", "write")
        for n in (
            "bw_bytes",
            *(f"clat_ns.{s}" for s in ("max", "mean", "min", "stddev")),
            *(
                f"clat_ns.p{p}"
                for p in (1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95)
            ),
            "clat_ns.p99.99",
            "io_bytes",
            "iops",
            *(f"lat_ns.{s}" for s in ("max", "mean", "min", "stddev")),
            "runtime_ms",
            "short_ios",
            *(f"slat_ns.{s}" for s in ("max", "mean", "min", "stddev")),
            "total_ios",
        )
    ),
)
EVIDENCE_METRICS = (
    "jbd2.avg_commit_ms",
    "jbd2.fast_commits",
    "jbd2.transactions",
    "jbd2.transactions_requested",
    *(
        f"vmstat.{n}"
        for n in (
            "nr_dirtied_pages",
            "nr_written_pages",
            "nr_throttled_written_pages",
            "pgpgin_kb",
            "pgpgout_kb",
            "pswpin_pages",
            "pswpout_pages",
            "pgsteal_kswapd_pages",
            "pgsteal_direct_pages",
            "nr_dirty_pages.end",
            "nr_writeback_pages.end",
            "nr_dirty_pages.max",
            "nr_writeback_pages.max",
        )
    ),
)
METRICS = (*FIO_METRICS, *EVIDENCE_METRICS)
assert len(METRICS) == 100, len(METRICS)


def tables(seed: int = 21) -> tuple[list[dict[str, float]], list[dict[str, float]]]:
    """Two sides of N_PER_SIDE samples x 100 metrics (see the module docstring)."""
    rng = np.random.default_rng(seed)
    old: list[dict[str, float]] = [{} for _ in range(N_PER_SIDE)]
    new: list[dict[str, float]] = [{} for _ in range(N_PER_SIDE)]
    for i, name in enumerate(METRICS):
        level = float(10 ** rng.uniform(1, 6))
        cv = float(rng.uniform(0.01, 0.05))
        moved = 1.0 + (float(rng.uniform(0.02, 0.08)) * rng.choice([-1, 1]) if i % 3 == 0 else 0)
        counter = i % 4 == 1  # small integers: ties on both sides
        for side, factor in ((old, 1.0), (new, moved)):
            values = level * factor * np.exp(rng.normal(0.0, cv, N_PER_SIDE))
            if counter:
                values = np.round(values / level * 20.0)
            for sample, value in zip(side, values, strict=True):
                sample[name] = float(value)
    return old, new


def populate(db: Path) -> None:
    from iolab.model.sample import Sample
    from iolab.store import open_store

    with open_store(str(db)) as store:
        for label, side in zip(("old", "new"), tables(), strict=True):
            run_id = store.create_run("import", label=label)
            for i, metrics in enumerate(side):
                store.add_sample(
                    Sample(run_id=run_id, tool="fio", source=f"{label}-{i}.json", metrics=metrics)
                )
            store.finish_run(run_id)


def iolab_command() -> list[str]:
    script = Path(sys.executable).with_name("iolab")
    return [str(script)] if script.exists() else [sys.executable, "-m", "iolab"]


def find_benchstat() -> str | None:
    found = shutil.which("benchstat")
    if found:
        return found
    home = Path(os.environ.get("GOPATH", Path.home() / "go")) / "bin" / "benchstat"
    return str(home) if home.exists() else None


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one whole process; exit status 0 required."""
    began = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - began
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)}: exit status {status}: {err.decode()[-500:]}")
    return elapsed, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument(
        "--iolab-src",
        default=None,
        metavar="DIR",
        help="also time `iolab compare` with iolab imported from DIR (another checkout's src)",
    )
    parser.add_argument(
        "--python",
        default=None,
        metavar="EXE",
        help="also time `iolab compare` run by another interpreter (`EXE -m iolab`, the same "
        "sources): e.g. a source-built Python against the distribution's optimized one",
    )
    args = parser.parse_args()
    iolab = iolab_command()
    with tempfile.TemporaryDirectory(prefix="iolab-compare-speed-") as tmp:
        db = Path(tmp) / "speed.db"
        populate(db)
        # as a user's Python does, the children read and write cached bytecode (some machines'
        # environments set PYTHONDONTWRITEBYTECODE, which makes every run compile iolab again)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["IOLAB_DB"] = str(db)
        commands: dict[str, list[str]] = {
            "python3 -c pass": [sys.executable, "-c", "pass"],  # not a pyenv shim
            "iolab compare": [*iolab, "compare", "label:old", "label:new"],
        }
        if args.iolab_src:
            other = str(Path(args.iolab_src).resolve())
            commands["iolab compare (src)"] = [
                "env",
                f"PYTHONPATH={other}",
                *commands["iolab compare"],
            ]
        if args.python:
            # the same sources on the other interpreter's own site-packages (its venv), or on
            # this one's when it has none of its own
            commands["iolab compare (python)"] = [
                args.python,
                "-m",
                "iolab",
                "compare",
                "label:old",
                "label:new",
            ]
        benchstat = find_benchstat()
        if benchstat is None:
            print(
                "benchstat not found (PATH, ~/go/bin): skipped; to include it: "
                "go install golang.org/x/perf/cmd/benchstat@latest"
            )
        else:
            for label in ("old", "new"):
                out = subprocess.run(
                    [*iolab, "export", f"label:{label}"],
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                (Path(tmp) / f"{label}.txt").write_text(out)
            commands["benchstat"] = [benchstat, f"{tmp}/old.txt", f"{tmp}/new.txt"]
        for argv in commands.values():  # warm the page cache and .pyc files once
            timed(argv, env)
        walls: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, argv in commands.items():
                wall, cpu = timed(argv, env)
                walls[name].append(wall)
                cpus[name].append(cpu)
    load = os.getloadavg()
    print(
        f"{len(METRICS)} metrics x {N_PER_SIDE} samples per side; {args.runs} interleaved "
        f"rounds; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    floor = statistics.median(walls["python3 -c pass"])
    floor_cpu = statistics.median(cpus["python3 -c pass"])
    ref = statistics.median(walls["benchstat"]) if "benchstat" in walls else None
    print(
        f"{'command':<20} {'median':>9} {'min':>9} {'max':>9} {'CPU med':>9} "
        f"{'÷ python':>9} {'CPU ÷':>7} {'÷ benchstat':>12}"
    )
    for name in commands:
        med = statistics.median(walls[name])
        cpu = statistics.median(cpus[name])
        vs_ref = f"{med / ref:11.1f}x" if ref else f"{'–':>12}"
        print(
            f"{name:<20} {med * 1e3:7.1f}ms {min(walls[name]) * 1e3:7.1f}ms "
            f"{max(walls[name]) * 1e3:7.1f}ms {cpu * 1e3:7.1f}ms "
            f"{med / floor:8.1f}x {cpu / floor_cpu:6.1f}x {vs_ref}"
        )
    med = statistics.median(walls["iolab compare"])
    met = "met" if med <= TARGET_S else "NOT met"
    print(f"target: iolab compare <= {TARGET_S:.2f} s wall: {met} ({med:.3f} s)")


if __name__ == "__main__":
    main()
