"""Simulate a kernel bisect on a host that boots a kernel per switch: which end should sit
beside a step's candidate?

Usage:  .venv/bin/python bench/sim_step_ends.py [--reps N] [--seed S] [--n 17] [--culprit 10]
        [--gap 0.65] [--boot-sd 0.2] [--sample-sd 0.1] [--df 4] [--max-blocks 12]
        [--sample-s 17] [--boot-s 38] [--policies alternate,per-step,good]

A classified step measures its candidate beside one end per block (`iolab.bisect.step.
ClassifyStep`).  On a host that switches kernels with `reboot: per-switch`, a block's
samples run in the lab's paired order (`iolab.kernels.order.paired_block_order`: one random
order, then its reverse), and a sample boots only when its kernel differs from the one
running.  The policies compared, on the same histories and noise streams:

- `alternate`: good beside the candidate in a step's even blocks, bad in its odd ones (the
  design until 2026-11-28);
- `per-step`: one end for all of a step's blocks, good in odd steps and bad in even ones;
- `good`: the good end beside every step's candidate (the design now).

Noise: a sample's log value is its commit's level (0 before the culprit, -gap from it on)
plus a boot effect (shared by the samples of one boot) and a sample effect, both Student t
with `--df` degrees of freedom scaled to the given standard deviations.  Costs: each sample
`--sample-s` seconds, each boot `--boot-s`.  Reported per policy: the share of bisects that
found the culprit, named a wrong one, or ended otherwise; and the mean blocks, samples,
boots and hours.  The engine is the lab's (`iolab.bisect.Bisection`), unchanged but for
the policy.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import iolab.bisect.engine as engine_mod
from iolab.bisect import Bisection, Settings
from iolab.bisect.step import ClassifyStep
from iolab.kernels.order import paired_block_order
from iolab.model.metrics import Direction


@dataclass
class Tally:
    found: int = 0
    wrong: int = 0
    other: int = 0
    blocks: int = 0
    samples: int = 0
    boots: int = 0
    seconds: float = 0.0


def noise(rng: np.random.Generator, sd: float, df: float) -> float:
    if sd == 0:
        return 0.0
    scale = sd * np.sqrt((df - 2) / df) if df > 2 else sd
    return float(scale * rng.standard_t(df))


def one_bisect(args: argparse.Namespace, seed: int, tally: Tally) -> None:
    rng = np.random.default_rng(seed)
    n, culprit = args.n, args.culprit
    engine = Bisection(Settings(n=n, direction=Direction.HIGHER, max_blocks=args.max_blocks))
    running: int | None = None
    boot_effect = 0.0
    block = 1
    while (measure := engine.action()) is not None:
        order = paired_block_order(seed, block, len(measure.arms))
        values: dict[int, float] = {}
        for position in order:
            arm = measure.arms[position]
            if arm != running:
                running, boot_effect = arm, noise(rng, args.boot_sd, args.df)
                tally.boots += 1
            level = -args.gap if arm >= culprit else 0.0
            values[arm] = float(np.exp(level + boot_effect + noise(rng, args.sample_sd, args.df)))
        engine.feed(np.array([[values[a] for a in measure.arms]]))
        block += 1
    out = engine.outcome
    tally.blocks += out.blocks
    tally.samples += out.samples
    if out.kind == "found":
        if out.first == culprit:
            tally.found += 1
        else:
            tally.wrong += 1
    else:
        tally.other += 1


def policies() -> dict[str, tuple[Callable[[ClassifyStep, int], int], Callable[[int], int]]]:
    fixed = ClassifyStep.end_for
    return {
        "alternate": (lambda _step, block: block % 2, lambda _s: 0),
        "per-step": (fixed, lambda s: (s - 1) % 2),
        "good": (fixed, lambda _s: 0),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--n", type=int, default=17)
    ap.add_argument("--culprit", type=int, default=10)
    ap.add_argument("--gap", type=float, default=0.65)
    ap.add_argument("--boot-sd", type=float, default=0.2)
    ap.add_argument("--sample-sd", type=float, default=0.1)
    ap.add_argument("--df", type=float, default=4.0)
    ap.add_argument("--max-blocks", type=int, default=12)
    ap.add_argument("--sample-s", type=float, default=17.0)
    ap.add_argument("--boot-s", type=float, default=38.0)
    ap.add_argument("--policies", default="alternate,per-step,good")
    args = ap.parse_args()
    print(
        f"n={args.n} culprit={args.culprit} gap={args.gap} boot_sd={args.boot_sd} "
        f"sample_sd={args.sample_sd} df={args.df} max_blocks={args.max_blocks} reps={args.reps}"
    )
    print("policy      found  wrong  other  blocks  samples  boots  minutes")
    saved = ClassifyStep.end_for, engine_mod.step_end
    try:
        chosen = args.policies.split(",")
        for name, (end_for, step_end) in policies().items():
            if name not in chosen:
                continue
            ClassifyStep.end_for = end_for  # type: ignore[method-assign,assignment]
            engine_mod.step_end = step_end  # type: ignore[assignment]
            t = Tally()
            for r in range(args.reps):
                one_bisect(args, args.seed * 100_003 + r, t)
            k = args.reps
            minutes = (t.samples * args.sample_s + t.boots * args.boot_s) / 60 / k
            print(
                f"{name:10s} {t.found / k:6.1%} {t.wrong / k:6.1%} {t.other / k:6.1%} "
                f"{t.blocks / k:7.1f} {t.samples / k:8.1f} {t.boots / k:6.1f} {minutes:8.1f}"
            )
    finally:
        ClassifyStep.end_for = saved[0]  # type: ignore[method-assign]
        engine_mod.step_end = saved[1]


if __name__ == "__main__":
    main()
