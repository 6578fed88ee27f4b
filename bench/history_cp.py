"""Change-point detection on series drawn from the recorded data sets (docs/history.md).

Usage:  .venv/bin/python bench/history_cp.py [--reps N] [--length N] [--seed S] [--out FILE.md]

Series are drawn from bench/data/ext4-fsync-16k-lab.csv and ...-lab-quiet.csv (write.iops of
one lab job, ~210 runs in recording order each):
- "window": a contiguous stretch of the recording, so the machine's drift is kept;
- "runs": each point the median of a lab run of 5 consecutive samples from a random place
  (iolab's method also gets each run's standard error from its 5 samples);
- "runs-quiet": the same, from the quiet recording only (CV 12% per sample);
- "shuffled": the same values in random order (independent noise).
A step series multiplies every point from a random position in [length/4, 3*length/4) on by
(1 - step).  For every method: false change points per 100 points of flat series, and for
3%, 5%, 10% steps the detection rate (exactly one reported change point within +-3 points of
the true position, nothing else) and the median position error of those found.

Methods: iolab's choice (iolab.history.changepoints.detect with its defaults), Otava's
defaults (`otava.analysis.compute_change_points(series, window_len=50, max_pvalue=0.001)`,
the real apache-otava 0.8.0 package: `.venv/bin/pip install --no-deps apache-otava==0.8.0`,
its analysis module needs only numpy and scipy), and the alternatives measured before
choosing: alpha 0.01, min_segment 3, and ruptures' PELT alone (no confirmation).
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from iolab.history.changepoints import DetectOptions, candidates, detect, noise_scale

DATA = Path(__file__).with_name("data")
SETS = ("ext4-fsync-16k-lab.csv", "ext4-fsync-16k-lab-quiet.csv")
STEPS = (0.03, 0.05, 0.10)
TOLERANCE = 3
MODES = ("window", "runs", "runs-quiet", "shuffled")

RUN = 5  # samples per lab run in the "runs" condition
# a method sees the per-run values and, when runs had replicates, each value's standard error
Method = Callable[[NDArray[np.float64], NDArray[np.float64] | None], list[int]]


def load(path: Path, column: str = "write.iops") -> NDArray[np.float64]:
    with path.open() as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    return np.array([float(r[column]) for r in rows if r.get(column)])


def iolab_method(options: DetectOptions) -> Method:
    def method(x: NDArray[np.float64], se: NDArray[np.float64] | None) -> list[int]:
        errors = None if se is None else list(map(float, se))
        return [s.index for s in detect(list(x), errors, options=options)]

    return method


def iolab_without_se(x: NDArray[np.float64], se: NDArray[np.float64] | None) -> list[int]:
    """iolab's defaults, blind to the runs' own standard errors (is the replicate variance
    worth passing?)."""
    return [s.index for s in detect(list(x), None, options=DetectOptions())]


def pelt_only(x: NDArray[np.float64], se: NDArray[np.float64] | None) -> list[int]:
    y = np.log(x)
    return candidates(y, noise_scale(y, None if se is None else list(se)), DetectOptions())


def otava_default(x: NDArray[np.float64], se: NDArray[np.float64] | None) -> list[int]:
    from otava.analysis import compute_change_points

    points, _ = compute_change_points(list(map(float, x)), window_len=50, max_pvalue=0.001)
    return [int(cp.index) for cp in points]


@dataclass
class Tally:
    flat_points: int = 0
    flat_found: int = 0
    detected: dict[float, int] | None = None
    errors: dict[float, list[int]] | None = None
    trials: dict[float, int] | None = None
    seconds: float = 0.0
    calls: int = 0
    hits5: list[bool] | None = None  # per replicate: the 5% step detected?


def draw(
    source: NDArray[np.float64], length: int, mode: str, rng: np.random.Generator
) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
    """A series of `length` points and, for runs with replicates, each point's log-scale SE."""
    if mode == "shuffled":
        return rng.choice(source, size=length, replace=False), None
    if mode.startswith("runs"):
        starts = rng.integers(0, source.size - RUN + 1, size=length)
        runs = np.stack([source[s : s + RUN] for s in starts])
        se = 1.2533 * np.std(np.log(runs), axis=1, ddof=1) / np.sqrt(RUN)
        return np.median(runs, axis=1), se
    start = int(rng.integers(0, source.size - length + 1))
    return source[start : start + length].copy(), None


def run(
    methods: dict[str, Method], reps: int, length: int, seed: int
) -> dict[tuple[str, str], Tally]:
    rng = np.random.default_rng(seed)
    sources = [load(DATA / name) for name in SETS]
    out: dict[tuple[str, str], Tally] = {}
    for mode in MODES:
        for name in methods:
            out[(mode, name)] = Tally(
                detected={s: 0 for s in STEPS},
                errors={s: [] for s in STEPS},
                trials={s: 0 for s in STEPS},
                hits5=[],
            )
        for rep in range(reps):
            src = sources[1] if mode == "runs-quiet" else sources[rep % len(sources)]
            flat, flat_se = draw(src, length, mode, rng)
            steps = []
            for step in STEPS:
                base, se = draw(src, length, mode, rng)
                at = int(rng.integers(length // 4, 3 * length // 4))
                base[at:] *= 1.0 - step
                steps.append((step, at, base, se))
            for name, method in methods.items():
                tally = out[(mode, name)]
                t0 = time.perf_counter()
                found = method(flat, flat_se)
                tally.flat_points += length
                tally.flat_found += len(found)
                for step, at, series, se in steps:
                    cps = method(series, se)
                    assert tally.trials and tally.detected is not None and tally.errors is not None
                    tally.trials[step] += 1
                    near = [c for c in cps if abs(c - at) <= TOLERANCE]
                    hit = len(cps) == 1 and bool(near)
                    if hit:
                        tally.detected[step] += 1
                        tally.errors[step].append(abs(near[0] - at))
                    if step == 0.05 and tally.hits5 is not None:
                        tally.hits5.append(hit)
                tally.seconds += time.perf_counter() - t0
                tally.calls += 1 + len(steps)
    return out


def table(results: dict[tuple[str, str], Tally], reps: int, length: int, seed: int) -> str:
    lines = [
        f"{reps} series of {length} points per condition and step (seed {seed}); "
        f"detected = exactly one change point within ±{TOLERANCE} points of the step.",
        "",
        "| series | method | false CPs / 100 flat points | "
        + " | ".join(f"detected {s:.0%} (median error)" for s in STEPS)
        + " | ms / series |",
        "|---|---|---|" + "---|" * len(STEPS) + "---|",
    ]
    for (mode, name), t in results.items():
        assert t.detected is not None and t.errors is not None and t.trials is not None
        cells = []
        for s in STEPS:
            rate = t.detected[s] / max(t.trials[s], 1)
            err = f"{np.median(t.errors[s]):.0f}" if t.errors[s] else "–"
            cells.append(f"{rate:.0%} ({err})")
        fp = 100.0 * t.flat_found / max(t.flat_points, 1)
        ms = 1000.0 * t.seconds / max(t.calls, 1)
        lines.append(f"| {mode} | {name} | {fp:.2f} | " + " | ".join(cells) + f" | {ms:.0f} |")
    names = list(dict.fromkeys(name for _, name in results))
    first, otava = names[0], next((n for n in names if n.startswith("Otava")), None)
    if otava is not None and otava != first:
        lines += [
            "",
            f"5% steps, the same series: detected by {first.split(' (')[0]} only / by Otava only "
            "(discordant pairs; an exact sign test on them compares the two detection rates)",
            "",
            "| series | iolab only | Otava only | sign-test p (two-sided) |",
            "|---|---|---|---|",
        ]
        from scipy.stats import binomtest

        for mode in dict.fromkeys(m for m, _ in results):
            a, b = results[(mode, first)].hits5 or [], results[(mode, otava)].hits5 or []
            only_a = sum(x and not y for x, y in zip(a, b, strict=True))
            only_b = sum(y and not x for x, y in zip(a, b, strict=True))
            p = binomtest(only_a, only_a + only_b).pvalue if only_a + only_b else 1.0
            lines.append(f"| {mode} | {only_a} | {only_b} | {p:.2g} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--length", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--only", action="append", help="method names to run")
    args = parser.parse_args(argv)
    methods: dict[str, Method] = {
        "iolab (PELT + rank permutation, min segment 5, alpha 0.02)": iolab_method(DetectOptions()),
        "iolab, alpha 0.01": iolab_method(DetectOptions(alpha=0.01)),
        "iolab, min segment 3": iolab_method(DetectOptions(min_segment=3)),
        "iolab without the runs' SE": iolab_without_se,
        "ruptures PELT alone": pelt_only,
        "Otava defaults (window 50, p 0.001)": otava_default,
    }
    if args.only:
        methods = {k: v for k, v in methods.items() if any(o in k for o in args.only)}
    t0 = time.perf_counter()
    text = table(run(methods, args.reps, args.length, args.seed), args.reps, args.length, args.seed)
    text += f"\n({time.perf_counter() - t0:.0f} s)\n"
    sys.stdout.write(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
