"""Simulate `iolab bisect` (and two baselines) on recorded noise with a known culprit.

Usage:  .venv/bin/python bench/sim_bisect.py DATA.csv [--reps N] [--seed S] [--out FILE.md]
        [--sizes 16,64,256] [--effects 0,3,5,10] [--pinpoint-reps N]

History model.  n candidate commits after the good end; commit k (uniform in 0..n-1, drawn
per history) is the culprit: it and every later commit are slower by the effect (the KPI is
higher-is-better, so values are multiplied by 1 - effect).  An effect of 0 makes the ends
equal: any culprit named is false.

Noise.  Real per-sample noise: every measured sample is a value of the recorded series,
taken in recording order (a block of k arms takes k consecutive values, the next block the
next ones; every 16 blocks the stream jumps to a random point, circularly), so drift and
autocorrelation are the recorded ones.  Inside a block the arms take the values in a random
order, as the lab's randomized blocks do.

Methods, on the same histories (same culprit position and the same noise stream seed):
- iolab bisect, binary search (`iolab.bisect.Bisection`, search="binary") — the lab's code;
- iolab bisect, probabilistic bisection (search="probabilistic", each query graded at 0.01);
  `classify*` grade the steps between the ends (the default); the ends and the verification
  are one-sided tests as in `iolab bisect`, `classify-two-sided` the two-sided form before;
- Pinpoint's rule (bench/baselines/pinpoint.py): the ends compared with Pinpoint's
  three-outcome test (10 attempts per side, 10 more while unknown, at most 160); then
  binary search where each step compares (lo, mid) and (mid, hi) the same way and follows
  the side called different; both "same"/unknown ends with no culprit.  Told the true
  effect as its expected magnitude (favourable to it);
- by hand: binary search, 5 runs per commit run one commit after the other (so drift is
  not randomized), the candidate judged bad when a two-sided U test against the good end's
  5 runs gives p <= 0.05 with a lower median; the ends the same way (no difference: stop).
Reported per cell: share correct (exactly the culprit), wrong culprit, range or not known,
and runs (samples) used on average.  At effect 0 "wrong" is a false culprit.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from baselines.pinpoint import pinpoint_sequential
from sim_stats import load_series

from iolab.bisect import GOOD, Bisection, Settings
from iolab.model.metrics import Direction
from iolab.stats.sequential import sign_bets_for

SEGMENT = 16
CHUNK = 32


class Noise:
    """A stream of recorded values, read in order with random jumps every SEGMENT blocks."""

    def __init__(self, series: np.ndarray, rng: np.random.Generator) -> None:
        self.x = series / np.median(series)
        self.rng = rng
        self.pos = int(rng.integers(series.size))
        self.blocks_left = SEGMENT

    def take(self, k: int) -> np.ndarray:
        if self.blocks_left == 0:
            self.pos, self.blocks_left = int(self.rng.integers(self.x.size)), SEGMENT
        idx = (self.pos + np.arange(k)) % self.x.size
        self.pos = (self.pos + k) % self.x.size
        self.blocks_left -= 1
        out: np.ndarray = self.x[idx]
        return out

    def blocks(self, rows: int, k: int) -> np.ndarray:
        """rows × k values, each row a block in a random order."""
        out = np.empty((rows, k))
        for r in range(rows):
            out[r] = self.rng.permutation(self.take(k))
        return out


@dataclass
class History:
    n: int
    culprit: int
    effect: float

    def level(self, index: int) -> float:
        bad = index != GOOD and index >= self.culprit and self.effect > 0
        return 1.0 - self.effect if bad else 1.0


@dataclass
class Result:
    kind: str  # correct | wrong | other
    samples: int


def classify(found: int | None, h: History) -> str:
    if found is None:
        return "other"
    return "correct" if h.effect > 0 and found == h.culprit else "wrong"


def run_iolab(
    h: History,
    noise: Noise,
    search: str,
    max_blocks: int,
    grade: str = "randomized",
    one_sided: bool = True,
) -> Result:
    b = Bisection(
        Settings(
            n=h.n,
            direction=Direction.HIGHER,
            search=search,  # type: ignore[arg-type]
            max_blocks=max_blocks,
            grade=grade,  # type: ignore[arg-type]
            sign_bets=sign_bets_for(max_blocks),  # as `iolab bisect` sizes them
            one_sided=one_sided,
        ),
        track_interval=False,
    )
    while not b.done:
        m = b.action()
        if m is None:  # the request itself ended the bisection (too many steps)
            break
        levels = np.array([h.level(i) for i in m.arms])
        b.feed(noise.blocks(CHUNK, len(m.arms)) * levels)
    o = b.outcome
    return Result(classify(o.culprit, h), o.samples)


def run_pinpoint(h: History, noise: Noise, cap: int = 160) -> Result:
    used = 0

    def compare(a_index: int, b_index: int) -> str:
        nonlocal used
        pairs = noise.blocks(cap, 2) * np.array([h.level(a_index), h.level(b_index)])

        def draw(k: int) -> tuple[list[float], list[float]]:
            return list(pairs[:k, 0]), list(pairs[:k, 1])

        outcome, n = pinpoint_sequential(draw, max(h.effect, 0.03), max_per_side=cap)
        used += 2 * n
        return outcome

    if compare(GOOD, h.n - 1) != "regression":
        return Result("other", used)
    lo, hi = GOOD, h.n - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if compare(lo, mid) == "regression":
            hi = mid
        elif compare(mid, hi) == "regression":
            lo = mid
        else:
            return Result("other", used)
    return Result(classify(hi, h), used)


def run_by_hand(h: History, noise: Noise, per_commit: int = 5) -> Result:
    def measure(index: int) -> np.ndarray:
        return noise.take(per_commit) * h.level(index)

    def worse(base: np.ndarray, other: np.ndarray) -> bool:
        p = stats.mannwhitneyu(base, other, alternative="two-sided").pvalue
        return bool(p <= 0.05 and np.median(other) < np.median(base))

    good, bad = measure(GOOD), measure(h.n - 1)
    used = 2 * per_commit
    if not worse(good, bad):
        return Result("other", used)
    lo, hi = GOOD, h.n - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        used += per_commit
        if worse(good, measure(mid)):
            hi = mid
        else:
            lo = mid
    return Result(classify(hi, h), used)


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--pinpoint-reps", type=int, default=None, help="default: reps / 4")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sizes", default="16,64,256")
    ap.add_argument("--effects", default="0,3,5,10")
    ap.add_argument("--max-blocks", type=int, default=300)
    ap.add_argument("--methods", default="binary,probabilistic,pinpoint,hand")
    ap.add_argument("--out")
    args = ap.parse_args()
    series, _ = load_series(args.data)
    sizes = [int(s) for s in args.sizes.split(",")]
    effects = [float(e) / 100 for e in args.effects.split(",")]
    pin_reps = args.pinpoint_reps or max(25, args.reps // 4)
    methods: dict[str, Callable[[History, Noise], Result]] = {
        "binary": lambda h, z: run_iolab(h, z, "binary", args.max_blocks),
        "probabilistic": lambda h, z: run_iolab(h, z, "probabilistic", args.max_blocks),
        "classify": lambda h, z: run_iolab(
            h, z, "probabilistic", args.max_blocks, grade="classify"
        ),
        "classify-binary": lambda h, z: run_iolab(
            h, z, "binary", args.max_blocks, grade="classify"
        ),
        "classify-two-sided": lambda h, z: run_iolab(
            h, z, "probabilistic", args.max_blocks, grade="classify", one_sided=False
        ),
        "pinpoint": run_pinpoint,
        "hand": run_by_hand,
    }
    labels = {
        "binary": "iolab bisect (binary search, sequential steps)",
        "probabilistic": "iolab bisect (probabilistic bisection)",
        "classify": "iolab bisect (probabilistic, steps classified between the ends)",
        "classify-binary": "iolab bisect (binary search, steps classified between the ends)",
        "classify-two-sided": "iolab bisect (classify, ends and verification two-sided)",
        "pinpoint": "Pinpoint's rule",
        "hand": "by hand: 5 runs per commit + U test",
    }
    chosen = [m for m in args.methods.split(",") if m]
    cv = series.std(ddof=1) / series.mean()
    lines = [
        f"Data: `{args.data}` (n={series.size}, CV {cv:.1%}); seed {args.seed}; "
        f"{args.reps} histories per cell ({pin_reps} for Pinpoint); "
        f"iolab budget {args.max_blocks} blocks per test, alpha 0.05.",
        "",
        "| method | commits | effect | correct | wrong culprit | range / not known "
        "| runs used (mean) | s per history |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    for name in chosen:
        for n in sizes:
            for effect in effects:
                reps = pin_reps if name == "pinpoint" else args.reps
                rng = np.random.default_rng([args.seed, n, round(effect * 1000)])
                counts = {"correct": 0, "wrong": 0, "other": 0}
                runs = 0
                t0 = time.time()
                for _ in range(reps):
                    h = History(n, int(rng.integers(n)), effect)
                    noise = Noise(series, np.random.default_rng(rng.integers(2**63)))
                    r = methods[name](h, noise)
                    counts[r.kind] += 1
                    runs += r.samples
                took = (time.time() - t0) / reps
                row = (
                    f"| {labels[name]} | {n} | {100 * effect:g}% | "
                    + (pct(counts["correct"] / reps) if effect > 0 else "—")
                    + f" | {pct(counts['wrong'] / reps)} | {pct(counts['other'] / reps)} "
                    f"| {runs / reps:.0f} | {took:.2f} |"
                )
                lines.append(row)
                sys.stdout.write(row + "\n")
                sys.stdout.flush()
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
